"""list_dir, file_stat and file_delete."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox


@pytest.fixture
def tree(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "m.py").write_text("x = 1\n")
    (workspace / "b.txt").write_text("bb")
    (workspace / "A.md").write_text("a\nb\n")
    (workspace / ".hidden").write_text("h")
    (workspace / "zdir").mkdir()
    (workspace / "link").symlink_to("b.txt")
    return workspace


# -- list_dir -------------------------------------------------------------------------


def test_list_dir_sorted_dirs_first(tb: Toolbox, tree: Path) -> None:
    out = ok(tb.run("list_dir", {}))
    assert [e["name"] for e in out["entries"]] == ["src", "zdir", "A.md", "b.txt", "link"]
    kinds = {e["name"]: e["type"] for e in out["entries"]}
    assert kinds == {
        "src": "directory",
        "zdir": "directory",
        "A.md": "file",
        "b.txt": "file",
        "link": "symlink",
    }
    b = next(e for e in out["entries"] if e["name"] == "b.txt")
    assert b["size"] == 2 and b["last_modified"].endswith("+00:00")
    assert out["path"] == "." and out["truncated"] is False


def test_list_dir_hidden_on_request(tb: Toolbox, tree: Path) -> None:
    names = [e["name"] for e in ok(tb.run("list_dir", {"include_hidden": True}))["entries"]]
    assert ".hidden" in names


def test_list_dir_subdir_and_empty(tb: Toolbox, tree: Path) -> None:
    assert [e["name"] for e in ok(tb.run("list_dir", {"path": "src"}))["entries"]] == ["m.py"]
    out = ok(tb.run("list_dir", {"path": "zdir"}))
    assert out["entries"] == []
    assert "(empty)" in tb.render(tb.run("list_dir", {"path": "zdir"}))


def test_list_dir_symlink_out_of_jail_not_followed(tb: Toolbox, tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (tree / "escape").symlink_to(outside)
    entries = ok(tb.run("list_dir", {}))["entries"]
    assert {"name": "escape", "type": "symlink"}.items() <= next(
        e for e in entries if e["name"] == "escape"
    ).items()
    err(tb.run("list_dir", {"path": "escape"}), "PERMISSION_DENIED")


def test_list_dir_cap(tb: Toolbox, workspace: Path) -> None:
    for i in range(1005):
        (workspace / f"f{i:04}").write_bytes(b"")
    out = ok(tb.run("list_dir", {}))
    assert len(out["entries"]) == 1000 and out["total"] == 1005 and out["truncated"]
    assert "5 more entries" in tb.render(tb.run("list_dir", {}))


def test_list_dir_errors(tb: Toolbox, tree: Path) -> None:
    err(tb.run("list_dir", {"path": "missing"}), "NOT_FOUND")
    err(tb.run("list_dir", {"path": ".."}), "PERMISSION_DENIED")
    err(tb.run("list_dir", {"path": "b.txt"}), "INVALID_INPUT")
    err(tb.run("list_dir", {"include_hidden": "maybe"}), "INVALID_INPUT")


def test_list_dir_permission(make_toolbox: Any, tree: Path) -> None:
    tb = make_toolbox({"permissions": {"read:file": "deny"}})
    err(tb.run("list_dir", {}), "PERMISSION_DENIED")


# -- file_stat ------------------------------------------------------------------------


def test_file_stat_file(tb: Toolbox, tree: Path) -> None:
    out = ok(tb.run("file_stat", {"path": "A.md"}))
    assert out["type"] == "file" and out["size"] == 4 and out["lines"] == 2
    assert out["readonly"] is False


def test_file_stat_dir_symlink_binary(tb: Toolbox, tree: Path) -> None:
    assert ok(tb.run("file_stat", {"path": "src"}))["type"] == "directory"
    assert ok(tb.run("file_stat", {"path": "link"}))["type"] == "symlink"
    (tree / "bin").write_bytes(b"\0\1\2")
    assert ok(tb.run("file_stat", {"path": "bin"}))["lines"] is None


def test_file_stat_readonly(tb: Toolbox, tree: Path) -> None:
    os.chmod(tree / "b.txt", 0o444)
    try:
        assert ok(tb.run("file_stat", {"path": "b.txt"}))["readonly"] is True
    finally:
        os.chmod(tree / "b.txt", 0o644)


def test_file_stat_errors(tb: Toolbox, tree: Path) -> None:
    err(tb.run("file_stat", {"path": "nope"}), "NOT_FOUND")
    err(tb.run("file_stat", {"path": "/etc/passwd"}), "PERMISSION_DENIED")
    err(tb.run("file_stat", {}), "INVALID_INPUT")


# -- file_delete ----------------------------------------------------------------------


def allow_delete(make_toolbox: Any) -> Toolbox:
    tb: Toolbox = make_toolbox({"permissions": {"delete:file": "allow"}})
    return tb


def test_delete_asks_by_default(tb: Toolbox, tree: Path) -> None:
    msg = err(tb.run("file_delete", {"path": "b.txt"}), "PERMISSION_DENIED")
    assert "delete:file" in msg
    assert (tree / "b.txt").exists()


def test_delete_file_and_empty_dir(make_toolbox: Any, tree: Path) -> None:
    tb = allow_delete(make_toolbox)
    out = ok(tb.run("file_delete", {"path": "b.txt"}))
    assert out == {"path": "b.txt", "deleted": True, "type": "file"}
    assert not (tree / "b.txt").exists()
    assert ok(tb.run("file_delete", {"path": "zdir"}))["type"] == "directory"


def test_delete_nonempty_dir_needs_recursive(make_toolbox: Any, tree: Path) -> None:
    tb = allow_delete(make_toolbox)
    assert "recursive" in err(tb.run("file_delete", {"path": "src"}), "INVALID_INPUT")
    assert (tree / "src" / "m.py").exists()
    ok(tb.run("file_delete", {"path": "src", "recursive": True}))
    assert not (tree / "src").exists()


def test_delete_symlink_keeps_target(make_toolbox: Any, tree: Path, tmp_path: Path) -> None:
    tb = allow_delete(make_toolbox)
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "precious").write_text("p")
    (tree / "d").mkdir()
    (tree / "d" / "out").symlink_to(outside)
    ok(tb.run("file_delete", {"path": "d", "recursive": True}))
    assert (outside / "precious").read_text() == "p"
    assert ok(tb.run("file_delete", {"path": "link"}))["type"] == "symlink"
    assert (tree / "b.txt").exists()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (".", "PERMISSION_DENIED"),
        ("", "INVALID_INPUT"),
        ("/", "PERMISSION_DENIED"),
        ("..", "PERMISSION_DENIED"),
        ("src/../..", "PERMISSION_DENIED"),
    ],
)
def test_delete_root_or_outside_refused(
    make_toolbox: Any, tree: Path, path: str, code: str
) -> None:
    tb = allow_delete(make_toolbox)
    err(tb.run("file_delete", {"path": path, "recursive": True}), code)
    assert (tree / "src" / "m.py").exists()


def test_delete_missing(make_toolbox: Any, tree: Path) -> None:
    err(allow_delete(make_toolbox).run("file_delete", {"path": "ghost"}), "NOT_FOUND")


def test_file_stat_describes_link_out_of_jail(tb: Toolbox, tree: Path, tmp_path: Path) -> None:
    (tmp_path / "target").write_text("t")
    (tree / "venv-python").symlink_to(tmp_path / "target")
    out = ok(tb.run("file_stat", {"path": "venv-python"}))
    assert out["type"] == "symlink"
    assert out["path"] == "venv-python"
    out = ok(tb.run("file_stat", {"path": "link"}))
    assert out["path"] == "link"


# -- list_dir: symlink targets, size, lexical path ------------------------------------


def test_list_dir_symlink_target_not_followed(tb: Toolbox, tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (tree / "escape").symlink_to(outside)
    (tree / "broken").symlink_to("no/such")
    entries = {e["name"]: e for e in ok(tb.run("list_dir", {}))["entries"]}
    assert entries["link"]["target"] == "b.txt"
    assert entries["escape"]["target"] == str(outside)
    assert entries["broken"] == {**entries["broken"], "type": "symlink", "target": "no/such"}
    assert "target" not in entries["b.txt"] and "target" not in entries["src"]
    rendered = tb.render(tb.run("list_dir", {}))
    assert "link@ -> b.txt" in rendered and f"escape@ -> {outside}" in rendered
    assert "secret" not in rendered


def test_list_dir_path_is_as_given(tb: Toolbox, tree: Path) -> None:
    (tree / "alias").symlink_to("src")
    out = ok(tb.run("list_dir", {"path": "alias"}))
    assert out["path"] == "alias" and [e["name"] for e in out["entries"]] == ["m.py"]


def test_list_dir_hidden_not_counted_unless_asked(tb: Toolbox, tree: Path) -> None:
    assert ok(tb.run("list_dir", {}))["total"] == 5
    assert ok(tb.run("list_dir", {"include_hidden": True}))["total"] == 6


def test_list_dir_huge_directory_is_quick(tb: Toolbox, workspace: Path) -> None:
    import time

    big = workspace / "big"
    big.mkdir()
    for i in range(20_000):
        (big / f"f{i:05}").touch()
    (big / "zz-dir").mkdir()
    started = time.perf_counter()
    env = tb.run("list_dir", {"path": "big"})
    elapsed = time.perf_counter() - started
    out = ok(env)
    assert out["total"] == 20_001 and out["truncated"] and len(out["entries"]) == 1000
    assert out["entries"][0]["name"] == "zz-dir"  # folders first, even past the cap
    assert "19001 more entries not shown" in tb.render(env)
    assert elapsed < 5, f"listing 20,000 entries took {elapsed:.2f}s"


# -- file_delete: never the root, never outside -----------------------------------------


def test_delete_never_reaches_outside(make_toolbox: Any, tree: Path, tmp_path: Path) -> None:
    tb = allow_delete(make_toolbox)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("p")
    (tree / "escape").symlink_to(outside)
    for path in ("escape/precious", str(outside / "precious"), str(outside), "../outside"):
        err(tb.run("file_delete", {"path": path, "recursive": True}), "PERMISSION_DENIED")
    # The link itself is inside: deleting it leaves its target alone.
    assert ok(tb.run("file_delete", {"path": "escape", "recursive": True}))["type"] == "symlink"
    assert (outside / "precious").read_text() == "p"


def test_delete_workspace_root_by_any_spelling(make_toolbox: Any, tree: Path) -> None:
    tb = allow_delete(make_toolbox)
    (tree / "rootlink").symlink_to(".")
    for path in (str(tree), f"{tree}/", "src/..", "./.", "rootlink/.."):
        err(tb.run("file_delete", {"path": path, "recursive": True}), "PERMISSION_DENIED")
    assert (tree / "src" / "m.py").exists()
    # A link to the root is an entry like any other: only the link goes.
    out = ok(tb.run("file_delete", {"path": "rootlink/.", "recursive": True}))
    assert out["type"] == "symlink" and (tree / "src" / "m.py").exists()


def test_delete_extra_roots(make_toolbox: Any, tree: Path, tmp_path: Path) -> None:
    ro, wr = tmp_path / "ro", tmp_path / "wr"
    ro.mkdir()
    wr.mkdir()
    (ro / "r.txt").write_text("r")
    (wr / "w.txt").write_text("w")
    config = {"workspace": {"extra_roots": [str(ro)], "writable_roots": [str(wr)]}}
    tb = make_toolbox({**config, "permissions": {"delete:file": "allow"}})
    assert "read-only" in err(
        tb.run("file_delete", {"path": str(ro / "r.txt")}), "PERMISSION_DENIED"
    )
    for root in (ro, wr):
        err(tb.run("file_delete", {"path": str(root), "recursive": True}), "PERMISSION_DENIED")
    ok(tb.run("file_delete", {"path": str(wr / "w.txt")}))
    assert (ro / "r.txt").exists() and wr.is_dir() and not (wr / "w.txt").exists()
