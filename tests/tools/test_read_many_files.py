"""read_many_files: explicit paths and globs, per-file errors, caps, permissions."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.tools import builtin_tools
from local_tools.tools.read_many_files import read_many_files
from policy_calls import ScriptedAsker

CUT = "... (line cut)"
GIF_1X1 = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


def make_pdf(lines: list[str]) -> bytes:
    """A one-page PDF showing `lines`, written with pypdf."""
    pypdf = pytest.importorskip("pypdf", reason="pypdf builds the test PDF")
    from pypdf.generic import DictionaryObject, NameObject, StreamObject

    writer = pypdf.PdfWriter()
    page = writer.add_blank_page(612, 792)
    stream = StreamObject()
    ops = ["BT /F1 12 Tf 14 TL 72 720 Td", *(f"({line}) Tj T*" for line in lines), "ET"]
    stream.set_data("\n".join(ops).encode())
    page.replace_contents(stream)
    font = {"/Type": "/Font", "/Subtype": "/Type1", "/BaseFont": "/Helvetica"}
    page[NameObject("/Resources")] = DictionaryObject(
        {
            NameObject("/Font"): DictionaryObject(
                {
                    NameObject("/F1"): DictionaryObject(
                        {NameObject(k): NameObject(v) for k, v in font.items()}
                    )
                }
            )
        }
    )
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


@pytest.fixture
def make_many(make_toolbox: Any) -> Any:
    """Toolboxes with read_many_files, whether or not it is built in yet."""

    def make(config: Any = None, **kwargs: Any) -> Toolbox:
        builtin = {t.name for t in builtin_tools()}
        extra = [] if read_many_files.name in builtin else [read_many_files]
        return make_toolbox(config, tools=extra, **kwargs)

    return make


@pytest.fixture
def tbm(make_many: Any) -> Toolbox:
    return make_many()


@pytest.fixture
def tree(workspace: Path) -> Path:
    files = {
        "top.py": "top\n",
        "README.md": "# readme\n",
        "src/a.py": "a = 1\n",
        "src/notes.txt": "notes\n",
        "src/pkg/b.py": "b = 2\nc = 3\n",
        "src/pkg/deep/c.py": "c\n",
        "src/.hidden.py": "hidden file\n",
        "src/.cache/x.py": "cached\n",
        ".github/workflows/ci.py": "ci\n",
        ".git/hooks/h.py": "git internals\n",
        "node_modules/lib/n.py": "vendored\n",
        "tests/test_a.py": "test\n",
    }
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    return workspace


def paths(out: dict[str, Any]) -> list[str]:
    return [f["path"] for f in out["files"]]


def errors(out: dict[str, Any]) -> dict[str, str]:
    return {e["path"]: e["error_code"] for e in out["errors"]}


# --------------------------------------------------------------------------- normal


def test_explicit_paths_in_order(tbm: Toolbox, tree: Path) -> None:
    env = tbm.run("read_many_files", {"paths": ["src/pkg/b.py", "./top.py"]})
    out = ok(env)
    assert out["files"] == [
        {
            "path": "src/pkg/b.py",
            "content": "b = 2\nc = 3\n",
            "truncated": False,
            "start_line": 1,
            "end_line": 2,
            "total_lines": 2,
        },
        {
            "path": "top.py",
            "content": "top\n",
            "truncated": False,
            "start_line": 1,
            "end_line": 1,
            "total_lines": 1,
        },
    ]
    assert out["errors"] == [] and out["truncated"] is False
    assert tbm.render(env) == "==> src/pkg/b.py <==\n1\tb = 2\n2\tc = 3\n\n==> top.py <==\n1\ttop"


def test_include_glob_pathlib_semantics(tbm: Toolbox, tree: Path) -> None:
    out = ok(tbm.run("read_many_files", {"include": ["src/**/*.py"]}))
    assert paths(out) == ["src/a.py", "src/pkg/b.py", "src/pkg/deep/c.py"]
    assert paths(ok(tbm.run("read_many_files", {"include": ["*.py"]}))) == ["top.py"]
    out = ok(tbm.run("read_many_files", {"include": ["src/*/*.py"]}))
    assert paths(out) == ["src/pkg/b.py"]


def test_trailing_double_star_and_question_mark(tbm: Toolbox, tree: Path) -> None:
    out = ok(tbm.run("read_many_files", {"include": ["src/pkg/**"]}))
    assert paths(out) == ["src/pkg/b.py", "src/pkg/deep/c.py"]
    out = ok(tbm.run("read_many_files", {"include": ["src/?.py", "tests/test_[a-c].py"]}))
    assert paths(out) == ["src/a.py", "tests/test_a.py"]


def test_exclude_by_name_anywhere_or_by_path(tbm: Toolbox, tree: Path) -> None:
    out = ok(tbm.run("read_many_files", {"include": ["**/*.py"], "exclude": ["deep", "b.py"]}))
    assert paths(out) == ["top.py", "src/a.py", "tests/test_a.py"]
    out = ok(tbm.run("read_many_files", {"include": ["**/*.py"], "exclude": ["src/**"]}))
    assert paths(out) == ["top.py", "tests/test_a.py"]


def test_paths_and_globs_together_each_file_once(tbm: Toolbox, tree: Path) -> None:
    (tree / "link.py").symlink_to("top.py")
    out = ok(
        tbm.run(
            "read_many_files",
            {"paths": ["src/a.py", "top.py", "top.py", "link.py"], "include": ["src/*.py"]},
        )
    )
    assert paths(out) == ["src/a.py", "top.py"]


def test_glob_in_paths_is_an_include(tbm: Toolbox, tree: Path) -> None:
    out = ok(tbm.run("read_many_files", {"paths": ["tests/*.py"]}))
    assert paths(out) == ["tests/test_a.py"]


def test_per_file_limit_and_note(tbm: Toolbox, workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"{i}\n" for i in range(1, 1001)))
    env = tbm.run("read_many_files", {"paths": ["long.txt"]})
    (entry,) = ok(env)["files"]
    assert entry["end_line"] == 500 and entry["total_lines"] == 1000 and entry["truncated"]
    assert entry["content"] == "".join(f"{i}\n" for i in range(1, 501))
    assert "offset=501" in entry["note"] and "offset=501" in tbm.render(env)
    (entry,) = ok(tbm.run("read_many_files", {"paths": ["long.txt"], "limit": 3}))["files"]
    assert entry["content"] == "1\n2\n3\n"


def test_pdf_text_included(tbm: Toolbox, workspace: Path) -> None:
    (workspace / "doc.pdf").write_bytes(make_pdf(["Inside the PDF"]))
    (entry,) = ok(tbm.run("read_many_files", {"include": ["*.pdf"]}))["files"]
    assert entry["content"] == "--- page 1 ---\nInside the PDF\n" and entry["pages"] == 1


# --------------------------------------------------------------------------- hidden files


def test_hidden_git_and_node_modules_only_when_named(tbm: Toolbox, tree: Path) -> None:
    everything = paths(ok(tbm.run("read_many_files", {"include": ["**/*.py"]})))
    assert not any(p.startswith((".", "node_modules")) or "/." in p for p in everything)
    out = ok(tbm.run("read_many_files", {"include": [".github/**/*.py", "src/.*.py"]}))
    assert paths(out) == [".github/workflows/ci.py", "src/.hidden.py"]
    out = ok(tbm.run("read_many_files", {"include": [".*/**/*.py"]}))
    assert ".git/hooks/h.py" not in paths(out) and ".github/workflows/ci.py" in paths(out)
    out = ok(tbm.run("read_many_files", {"include": [".git/**/*.py", "node_modules/**/*.py"]}))
    assert paths(out) == [".git/hooks/h.py", "node_modules/lib/n.py"]


# --------------------------------------------------------------------------- permissions


def test_outside_path_reported_per_file(tbm: Toolbox, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("s3cret")
    (workspace / "ok.txt").write_text("fine\n")
    env = tbm.run("read_many_files", {"paths": ["ok.txt", "../secret.txt"]})
    out = ok(env)
    assert paths(out) == ["ok.txt"]
    assert list(errors(out).values()) == ["PERMISSION_DENIED"]
    assert "s3cret" not in json.dumps(env)


def test_symlink_out_found_by_glob_is_reported(tbm: Toolbox, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("s3cret")
    (workspace / "leak.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "ok.txt").write_text("fine\n")
    env = tbm.run("read_many_files", {"include": ["*.txt"]})
    out = ok(env)
    assert paths(out) == ["ok.txt"] and errors(out) == {"leak.txt": "PERMISSION_DENIED"}
    assert "s3cret" not in json.dumps(env)


def test_config_deny_rule_on_explicit_path_refuses_the_call(make_many: Any, tree: Path) -> None:
    tb = make_many({"permissions": {"read:file": {"src/pkg/*": "deny"}}})
    msg = err(tb.run("read_many_files", {"paths": ["top.py", "src/pkg/b.py"]}), "PERMISSION_DENIED")
    assert "src/pkg/b.py" in msg


def test_config_deny_rule_on_glob_match_skips_that_file(make_many: Any, tree: Path) -> None:
    tb = make_many({"permissions": {"read:file": {"src/pkg/*": "deny"}}})
    env = tb.run("read_many_files", {"include": ["src/**/*.py"]})
    out = ok(env)
    assert paths(out) == ["src/a.py"]  # a policy `*` spans folders
    assert errors(out) == {
        "src/pkg/b.py": "PERMISSION_DENIED",
        "src/pkg/deep/c.py": "PERMISSION_DENIED",
    }
    assert "b = 2" not in json.dumps(env)


def test_env_file_never_read_through_a_glob(tbm: Toolbox, workspace: Path) -> None:
    (workspace / ".env").write_text("API_KEY=xyz\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".env.local").write_text("TOKEN=abc\n")
    (workspace / ".env.example").write_text("API_KEY=\n")
    asker = ScriptedAsker()
    env = tbm.run("read_many_files", {"include": ["**/.env*"]}, asker=asker)
    out = ok(env)
    assert paths(out) == [".env.example"]
    assert errors(out) == {".env": "PERMISSION_DENIED", "sub/.env.local": "PERMISSION_DENIED"}
    assert "xyz" not in json.dumps(env) and "abc" not in json.dumps(env)
    assert asker.requests == []
    assert "paths" in out["errors"][0]["message"]


def test_env_file_named_explicitly_asks_the_user(tbm: Toolbox, workspace: Path) -> None:
    (workspace / ".env").write_text("API_KEY=xyz\n")
    (workspace / "a.txt").write_text("a\n")
    env = tbm.run("read_many_files", {"paths": ["a.txt", ".env"]})
    err(env, "PERMISSION_DENIED")
    assert "xyz" not in json.dumps(env)
    asker = ScriptedAsker("once")
    out = ok(tbm.run("read_many_files", {"paths": ["a.txt", ".env"]}, asker=asker))
    assert paths(out) == ["a.txt", ".env"] and out["files"][1]["content"] == "API_KEY=xyz\n"
    assert [r.subject for r in asker.requests] == [".env"]


# --------------------------------------------------------------------------- invalid input


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({}, "paths"),
        ({"exclude": ["*.py"]}, "paths"),
        ({"paths": [""]}, "paths"),
        ({"paths": "a.txt"}, "paths"),
        ({"include": ["*.py"], "limit": 0}, "limit"),
        ({"include": ["*.py"], "limit": 10**12}, "limit"),
        ({"include": ["*.py"], "recursive": True}, "recursive"),
    ],
)
def test_invalid_arguments(tbm: Toolbox, args: dict[str, Any], needle: str) -> None:
    assert needle in err(tbm.run("read_many_files", args), "INVALID_INPUT")


@pytest.mark.parametrize("pattern", ["/etc/*.conf", "../*.txt", "src/../../x/*", "./"])
def test_globs_stay_inside_the_workspace(tbm: Toolbox, tree: Path, pattern: str) -> None:
    err(tbm.run("read_many_files", {"include": [pattern]}), "INVALID_INPUT")


# --------------------------------------------------------------------------- not found


def test_missing_explicit_path_reported_with_suggestion(tbm: Toolbox, tree: Path) -> None:
    out = ok(tbm.run("read_many_files", {"paths": ["top.py", "READMEE.md"]}))
    assert paths(out) == ["top.py"]
    (problem,) = out["errors"]
    assert problem["error_code"] == "NOT_FOUND" and "README.md" in problem["message"]


def test_glob_matching_nothing_is_not_found(tbm: Toolbox, tree: Path) -> None:
    msg = err(tbm.run("read_many_files", {"include": ["**/*.rs"]}), "NOT_FOUND")
    assert "**/*.rs" in msg
    err(tbm.run("read_many_files", {"include": ["nowhere/**/*.py"]}), "NOT_FOUND")
    err(tbm.run("read_many_files", {"include": ["*.py"], "exclude": ["top.py"]}), "NOT_FOUND")


# --------------------------------------------------------------------------- edge cases


def test_binary_image_directory_and_empty_files_per_file(tbm: Toolbox, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01" * 50)
    (workspace / "pic.png").write_bytes(GIF_1X1)
    (workspace / "folder").mkdir()
    (workspace / "empty.txt").write_text("")
    env = tbm.run("read_many_files", {"paths": ["blob.bin", "pic.png", "folder", "empty.txt"]})
    out = ok(env)
    assert paths(out) == ["empty.txt"] and out["files"][0]["content"] == ""
    assert errors(out) == {
        "blob.bin": "INVALID_INPUT",
        "pic.png": "INVALID_INPUT",
        "folder": "INVALID_INPUT",
    }
    messages = {e["path"]: e["message"] for e in out["errors"]}
    assert "read_file" in messages["pic.png"] and "list_dir" in messages["folder"]
    text = tbm.render(env)
    assert "==> empty.txt <==\n(empty file)" in text and "==> blob.bin <== not read" in text


def test_crlf_bom_unicode_and_long_lines(tbm: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    (workspace / "u16.txt").write_bytes("\ufeffhé\nwörld\n".encode("utf-16-le"))
    (workspace / "min.js").write_text("x" * 300_000 + "\nend")
    (workspace / "cr.txt").write_bytes(b"a\rb\n")
    out = ok(tbm.run("read_many_files", {"include": ["*"]}))
    content = {f["path"]: f["content"] for f in out["files"]}
    assert content == {
        "cr.txt": "a\rb\n",
        "min.js": "x" * 2000 + CUT + "\nend",
        "u16.txt": "hé\nwörld\n",
        "w.txt": "one\r\ntwo\r\n",
    }
    assert {f["path"]: f["total_lines"] for f in out["files"]}["cr.txt"] == 1


def test_total_cap_across_files(tbm: Toolbox, workspace: Path) -> None:
    line = "z" * 999 + "\n"  # 1000 bytes
    for i in range(5):
        (workspace / f"f{i}.txt").write_text(line * 40)
    env = tbm.run("read_many_files", {"include": ["*.txt"]})
    out = ok(env)
    assert paths(out) == [f"f{i}.txt" for i in range(5)] and out["truncated"]
    sizes = [len(f["content"]) for f in out["files"]]
    assert sum(sizes) <= 100 * 1024
    # 102,400 bytes: two whole files, 22 lines of the third, not one line more
    assert sizes == [40_000, 40_000, 22_000, 0, 0]
    assert out["files"][2]["truncated"] and "offset=23" in out["files"][2]["note"]
    assert all(f["truncated"] and "Not read" in f["note"] for f in out["files"][3:])
    assert "Not read" in tbm.render(env)


def test_file_count_cap(tbm: Toolbox, workspace: Path) -> None:
    for i in range(60):
        (workspace / f"n{i:02d}.txt").write_text(f"{i}\n")
    env = tbm.run("read_many_files", {"include": ["*.txt"]})
    out = ok(env)
    assert len(out["files"]) == 50 and paths(out)[-1] == "n49.txt" and out["truncated"]
    assert any("60 files matched" in note for note in out["notes"])
    assert "60 files matched" in tbm.render(env)
