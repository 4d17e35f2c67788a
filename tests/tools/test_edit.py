"""edit and multi_edit as tools: files on disk, encodings, staleness, concurrency."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


@pytest.fixture
def src(workspace: Path) -> Path:
    path = workspace / "m.py"
    path.write_text(SOURCE)
    return path


def test_exact_edit(tb: Toolbox, src: Path) -> None:
    out = ok(tb.run("edit", {"path": "m.py", "old_string": "return 2", "new_string": "return 3"}))
    assert src.read_text() == SOURCE.replace("return 2", "return 3")
    assert out["replacements"] == 1
    assert out["strategy"] == "exact"
    assert out["path"] == "m.py"
    assert "-    return 2" in out["diff"]
    assert "+    return 3" in out["diff"]
    assert "matched by" not in tb.render(
        tb.run("edit", {"path": "m.py", "old_string": "return 3", "new_string": "return 4"})
    )


def test_ambiguous_is_conflict_and_file_untouched(tb: Toolbox, src: Path) -> None:
    msg = err(
        tb.run("edit", {"path": "m.py", "old_string": "return", "new_string": "yield"}), "CONFLICT"
    )
    assert "replace_all" in msg
    assert src.read_text() == SOURCE
    out = ok(
        tb.run(
            "edit",
            {"path": "m.py", "old_string": "return", "new_string": "yield", "replace_all": True},
        )
    )
    assert out["replacements"] == 2
    assert src.read_text().count("yield") == 2


def test_not_found_names_closest(tb: Toolbox, src: Path) -> None:
    msg = err(
        tb.run("edit", {"path": "m.py", "old_string": "def g():\n    return 7", "new_string": "x"}),
        "NOT_FOUND",
    )
    assert "5" in msg  # the closest block starts at line 5
    assert src.read_text() == SOURCE


def test_missing_file(tb: Toolbox) -> None:
    err(tb.run("edit", {"path": "nope.py", "old_string": "a", "new_string": "b"}), "NOT_FOUND")


def test_empty_old_string_creates(tb: Toolbox, workspace: Path) -> None:
    out = ok(tb.run("edit", {"path": "new/file.txt", "old_string": "", "new_string": "hello\n"}))
    assert out["created"] is True
    assert (workspace / "new/file.txt").read_text() == "hello\n"
    err(
        tb.run("edit", {"path": "new/file.txt", "old_string": "", "new_string": "again"}),
        "INVALID_INPUT",
    )
    assert (workspace / "new/file.txt").read_text() == "hello\n"


def test_identical_strings_refused(tb: Toolbox, src: Path) -> None:
    err(tb.run("edit", {"path": "m.py", "old_string": "f", "new_string": "f"}), "INVALID_INPUT")


def test_crlf_and_bom_kept(tb: Toolbox, workspace: Path) -> None:
    path = workspace / "w.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    ok(tb.run("edit", {"path": "w.txt", "old_string": "two\nthree", "new_string": "2\n3\n3.5"}))
    assert path.read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n3\r\n3.5\r\n"


def test_utf16_file_kept_utf16(tb: Toolbox, workspace: Path) -> None:
    path = workspace / "u16.txt"
    path.write_bytes("\ufeffhéllo wörld\n".encode("utf-16-le"))
    ok(tb.run("edit", {"path": "u16.txt", "old_string": "wörld", "new_string": "🌍"}))
    assert path.read_bytes() == "\ufeffhéllo 🌍\n".encode("utf-16-le")


def test_binary_and_undecodable_refused(tb: Toolbox, workspace: Path) -> None:
    (workspace / "b.bin").write_bytes(b"ab\0cd")
    err(tb.run("edit", {"path": "b.bin", "old_string": "ab", "new_string": "x"}), "INVALID_INPUT")
    (workspace / "l1.txt").write_bytes("café".encode("latin-1"))
    msg = err(
        tb.run("edit", {"path": "l1.txt", "old_string": "caf", "new_string": "x"}), "INVALID_INPUT"
    )
    assert "utf-8" in msg
    assert (workspace / "l1.txt").read_bytes() == "café".encode("latin-1")


def test_stale_file_is_conflict(tb: Toolbox, src: Path) -> None:
    ok(tb.run("read_file", {"path": "m.py"}))
    src.write_text(SOURCE + "# changed by someone else\n")
    msg = err(
        tb.run("edit", {"path": "m.py", "old_string": "return 1", "new_string": "return 0"}),
        "CONFLICT",
    )
    assert "read it again" in msg.lower() or "read_file" in msg
    assert src.read_text().endswith("# changed by someone else\n")
    ok(tb.run("read_file", {"path": "m.py"}))
    ok(tb.run("edit", {"path": "m.py", "old_string": "return 1", "new_string": "return 0"}))
    # our own edit does not make the file stale for us
    ok(tb.run("edit", {"path": "m.py", "old_string": "return 0", "new_string": "return -1"}))


def test_staleness_is_per_user(tb: Toolbox, src: Path) -> None:
    ok(tb.run("read_file", {"path": "m.py"}, user_id="alice"))
    ok(
        tb.run(
            "edit",
            {"path": "m.py", "old_string": "return 1", "new_string": "return 5"},
            user_id="bob",
        )
    )
    err(
        tb.run(
            "edit",
            {"path": "m.py", "old_string": "return 2", "new_string": "return 6"},
            user_id="alice",
        ),
        "CONFLICT",
    )


def test_concurrent_edits_are_serialized(tb: Toolbox, workspace: Path) -> None:
    path = workspace / "many.txt"
    path.write_text("".join(f"line {i}\n" for i in range(40)))
    barrier = threading.Barrier(8)
    results: list[dict[str, Any]] = []

    def worker(start: int) -> None:
        barrier.wait()
        for i in range(start, 40, 8):
            results.append(
                tb.run(
                    "edit",
                    {"path": "many.txt", "old_string": f"line {i}\n", "new_string": f"LINE {i}\n"},
                    user_id=f"user{i}",  # fresh sessions: no staleness between them
                )
            )

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r["success"] for r in results), [r.get("error") for r in results]
    assert path.read_text() == "".join(f"LINE {i}\n" for i in range(40))


def test_outside_and_permission(make_toolbox: Any, workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("secret")
    tb = make_toolbox({"permissions": {"write:file": {"*": "allow", "locked/*": "deny"}}})
    err(
        tb.run("edit", {"path": "../out.txt", "old_string": "secret", "new_string": "x"}),
        "PERMISSION_DENIED",
    )
    assert (tmp_path / "out.txt").read_text() == "secret"
    (workspace / "locked").mkdir()
    (workspace / "locked" / "f").write_text("a")
    err(
        tb.run("edit", {"path": "locked/f", "old_string": "a", "new_string": "b"}),
        "PERMISSION_DENIED",
    )
    assert (workspace / "locked" / "f").read_text() == "a"


def test_symlink_target_edited_inside(tb: Toolbox, workspace: Path) -> None:
    (workspace / "real.txt").write_text("alpha\n")
    (workspace / "link.txt").symlink_to("real.txt")
    ok(tb.run("edit", {"path": "link.txt", "old_string": "alpha", "new_string": "beta"}))
    assert (workspace / "real.txt").read_text() == "beta\n"


# -- multi_edit -------------------------------------------------------------------------


def test_multi_edit_applies_in_order(tb: Toolbox, src: Path) -> None:
    out = ok(
        tb.run(
            "multi_edit",
            {
                "path": "m.py",
                "edits": [
                    {"old_string": "def f():", "new_string": "def first():"},
                    {
                        "old_string": "def first():\n    return 1",
                        "new_string": "def first():\n    return 10",
                    },
                    {"old_string": "return 2", "new_string": "return 20"},
                ],
            },
        )
    )
    assert out["replacements"] == 3
    assert src.read_text() == "def first():\n    return 10\n\n\ndef g():\n    return 20\n"


def test_multi_edit_all_or_nothing(tb: Toolbox, src: Path) -> None:
    env = tb.run(
        "multi_edit",
        {
            "path": "m.py",
            "edits": [
                {"old_string": "return 1", "new_string": "return 10"},
                {"old_string": "no such text", "new_string": "x"},
            ],
        },
    )
    msg = err(env, "NOT_FOUND")
    assert msg.startswith("Edit 2 of 2 failed; nothing was changed.")
    assert env["error"]["details"]["edit"] == 2
    assert src.read_text() == SOURCE


def test_multi_edit_validation(tb: Toolbox, src: Path) -> None:
    err(tb.run("multi_edit", {"path": "m.py", "edits": []}), "INVALID_INPUT")
    err(tb.run("multi_edit", {"path": "m.py", "edits": [{"old": "a"}]}), "INVALID_INPUT")
