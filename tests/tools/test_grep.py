"""grep through the runner, with ripgrep and with the pure-Python fallback."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.search.engine import ENGINE_ENV
from local_tools.search.ripgrep import find_rg
from local_tools.tools import builtin_tools
from local_tools.tools.glob import glob
from local_tools.tools.grep import CUT_MARKER, MAX_LINE_CHARS, grep
from search.helpers import SLOW_PATTERN, make_slow_tree, wait_no_rg

# Once the lead registers the search tools, passing them again would be a duplicate.
EXTRA = [] if "grep" in {t.name for t in builtin_tools()} else [grep, glob]
HAVE_RG = find_rg() is not None


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg" and not HAVE_RG:
        pytest.skip("no ripgrep on this machine")
    monkeypatch.setenv(ENGINE_ENV, request.param)
    return str(request.param)


@pytest.fixture
def tb(make_toolbox: Any, engine: str) -> Toolbox:
    return make_toolbox(tools=EXTRA)


def write(root: Path, rel: str, data: str | bytes, mtime: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def project(workspace: Path) -> Path:
    write(workspace, "src/app.py", "import os\n\ndef main():\n    return find_me()\n", 1000)
    write(workspace, "src/lib/util.py", "def find_me():\n    return 42  # find_me\n", 3000)
    write(workspace, "README.md", "Call find_me() to start.\n", 2000)
    write(workspace, "notes.txt", "nothing here\n", 4000)
    return workspace


# -- normal use ---------------------------------------------------------------------


def test_matches_newest_file_first_lines_in_order(tb: Toolbox, project: Path) -> None:
    out = ok(tb.run("grep", {"pattern": r"find_me\(\)"}))
    assert [(m["path"], m["line"]) for m in out["matches"]] == [
        ("src/lib/util.py", 1),
        ("README.md", 1),
        ("src/app.py", 4),
    ]
    assert out["matches"][0]["text"] == "def find_me():"
    assert out["total"] == 3 and out["truncated"] is False
    assert out["files_with_matches"] == 3 and "note" not in out


def test_rendering_groups_by_file(tb: Toolbox, project: Path) -> None:
    text = tb.render(tb.run("grep", {"pattern": "find_me", "path": "src"}))
    assert text.splitlines()[:5] == [
        "src/lib/util.py:",
        "  1: def find_me():",
        "  2:     return 42  # find_me",
        "src/app.py:",
        "  4:     return find_me()",
    ]
    assert "3 matching line(s) in 2 file(s)." in text
    assert tb.render(tb.run("grep", {"pattern": "absent_word"})) == "No matches found."


def test_context_lines_are_marked(tb: Toolbox, project: Path) -> None:
    out = ok(tb.run("grep", {"pattern": "return 42", "context": 1}))
    assert out["matches"] == [
        {"path": "src/lib/util.py", "line": 1, "text": "def find_me():", "context": True},
        {"path": "src/lib/util.py", "line": 2, "text": "    return 42  # find_me"},
    ]
    assert out["total"] == 1
    assert "  1- def find_me():" in tb.render(
        tb.run("grep", {"pattern": "return 42", "context": 1})
    )


def test_include_ignore_case_and_rust_syntax(tb: Toolbox, project: Path) -> None:
    out = ok(tb.run("grep", {"pattern": "FIND_ME", "include": "*.md", "ignore_case": True}))
    assert [m["path"] for m in out["matches"]] == ["README.md"]
    out = ok(tb.run("grep", {"pattern": r"\d{2}\s+#", "include": "src/**/*.py,*.txt"}))
    assert [(m["path"], m["line"]) for m in out["matches"]] == [("src/lib/util.py", 2)]
    out = ok(tb.run("grep", {"pattern": "(?i)IMPORT OS", "include": "!*.md"}))
    assert [m["path"] for m in out["matches"]] == ["src/app.py"]


def test_path_may_be_a_file(tb: Toolbox, project: Path) -> None:
    out = ok(tb.run("grep", {"pattern": "find_me", "path": "src/lib/util.py"}))
    assert [m["line"] for m in out["matches"]] == [1, 2]
    assert {m["path"] for m in out["matches"]} == {"src/lib/util.py"}


def test_absolute_path_inside_the_workspace(tb: Toolbox, project: Path) -> None:
    out = ok(tb.run("grep", {"pattern": "find_me", "path": str(project / "src")}))
    assert {m["path"] for m in out["matches"]} == {"src/app.py", "src/lib/util.py"}


def test_extra_root_paths_are_absolute(
    make_toolbox: Any, project: Path, tmp_path: Path, engine: str
) -> None:
    extra = tmp_path / "shared"
    write(extra, "lib/shared.py", "def find_me_too():\n")
    tb = make_toolbox({"workspace": {"extra_roots": [str(extra)]}}, tools=EXTRA)
    out = ok(tb.run("grep", {"pattern": "find_me_too", "path": str(extra)}))
    real = os.path.realpath(extra)
    assert out["matches"] == [
        {"path": f"{real}/lib/shared.py", "line": 1, "text": "def find_me_too():"}
    ]
    listed = ok(tb.run("glob", {"pattern": "*.py", "path": str(extra)}))["files"]
    assert listed == [f"{real}/lib/shared.py"]


def test_alias(tb: Toolbox, project: Path) -> None:
    assert ok(tb.run("search_file_content", {"pattern": "nothing"}))["total"] == 1


# -- permissions ----------------------------------------------------------------------


def test_read_denied(make_toolbox: Any, project: Path, engine: str) -> None:
    tb = make_toolbox({"permissions": {"read:file": "deny"}}, tools=EXTRA)
    err(tb.run("grep", {"pattern": "find_me"}), "PERMISSION_DENIED")


def test_env_files_never_leak(tb: Toolbox, project: Path) -> None:
    write(project, ".env", "API_KEY=find_me_SECRET_VALUE\n")
    write(project, "config/.env.production", "TOKEN=find_me_SECRET_VALUE\n")
    write(project, ".env.example", "API_KEY=find_me_placeholder\n")
    env = tb.run("grep", {"pattern": "find_me"})
    out = ok(env)
    assert "SECRET_VALUE" not in json.dumps(env) and "SECRET_VALUE" not in tb.render(env)
    assert ".env.example" in {m["path"] for m in out["matches"]}
    assert "2 file(s) with matches were left out" in out["note"]
    assert out["total"] == 5  # the hidden files' matches are not counted either
    err(tb.run("grep", {"pattern": "find_me", "path": ".env"}), "PERMISSION_DENIED")


def test_policy_rules_on_subpaths(make_toolbox: Any, project: Path, engine: str) -> None:
    write(project, "secrets/key.txt", "find_me private\n")
    tb = make_toolbox(
        {"permissions": {"read:file": {"*": "allow", "secrets/*": "deny"}}}, tools=EXTRA
    )
    out = ok(tb.run("grep", {"pattern": "private"}))
    assert out["matches"] == [] and "1 file(s)" in out["note"]


def test_outside_the_workspace(tb: Toolbox, project: Path, tmp_path: Path) -> None:
    err(tb.run("grep", {"pattern": "root", "path": "/etc"}), "PERMISSION_DENIED")
    err(tb.run("grep", {"pattern": "x", "path": ".."}), "PERMISSION_DENIED")


def test_symlinks_are_not_followed(tb: Toolbox, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "leak.txt", "find_me outside the jail\n")
    (project / "escape").symlink_to(outside, target_is_directory=True)
    (project / "alias.py").symlink_to(project / "src" / "app.py")
    out = ok(tb.run("grep", {"pattern": "find_me"}))
    paths = {m["path"] for m in out["matches"]}
    assert paths == {"src/app.py", "src/lib/util.py", "README.md"}
    err(tb.run("grep", {"pattern": "find_me", "path": "escape"}), "PERMISSION_DENIED")


# -- invalid input --------------------------------------------------------------------


def test_bad_regex_reports_the_error(tb: Toolbox, project: Path) -> None:
    assert "unclosed group" in err(tb.run("grep", {"pattern": "find_me("}), "INVALID_INPUT")
    assert "look-around" in err(tb.run("grep", {"pattern": "(?<=x)y"}), "INVALID_INPUT")
    assert "backreference" in err(tb.run("grep", {"pattern": r"(a)\1"}), "INVALID_INPUT")


def test_bad_arguments(tb: Toolbox, project: Path) -> None:
    err(tb.run("grep", {"pattern": ""}), "INVALID_INPUT")
    err(tb.run("grep", {}), "INVALID_INPUT")
    err(tb.run("grep", {"pattern": "x", "context": 11}), "INVALID_INPUT")
    err(tb.run("grep", {"pattern": "x", "context": -1}), "INVALID_INPUT")
    err(tb.run("grep", {"pattern": "x", "flags": "i"}), "INVALID_INPUT")
    assert "glob" in err(tb.run("grep", {"pattern": "x", "include": "{a"}), "INVALID_INPUT")


def test_fallback_names_what_it_cannot_run(tb: Toolbox, project: Path, engine: str) -> None:
    env = tb.run("grep", {"pattern": r"\p{Greek}"})
    if engine == "rg":
        assert ok(env)["total"] == 0
    else:
        assert "pure-Python" in err(env, "INVALID_INPUT")


# -- not found ------------------------------------------------------------------------


def test_missing_path(tb: Toolbox, project: Path) -> None:
    err(tb.run("grep", {"pattern": "x", "path": "no/such/dir"}), "NOT_FOUND")


# -- timeout --------------------------------------------------------------------------


def test_timeout_stops_the_search(make_toolbox: Any, workspace: Path, engine: str) -> None:
    """A tool timeout ends the call, and with rg, kills the process."""
    make_slow_tree(workspace / "big", files=1)
    quick = dataclasses.replace(grep, name="grep_quick_timeout", aliases=(), timeout=0.3)
    tb = make_toolbox(tools=[quick])
    started = time.monotonic()
    message = err(tb.run("grep_quick_timeout", {"pattern": SLOW_PATTERN}), "TIMEOUT")
    assert "did not finish within 0.3 s" in message
    assert time.monotonic() - started < 1.5
    if engine == "rg" and os.path.isdir("/proc/self"):
        assert wait_no_rg() == []


# -- edge cases -----------------------------------------------------------------------


def test_empty_folder(tb: Toolbox, workspace: Path) -> None:
    (workspace / "empty").mkdir()
    out = ok(tb.run("grep", {"pattern": "x", "path": "empty"}))
    assert out == {"matches": [], "total": 0, "truncated": False, "files_with_matches": 0}


def test_hidden_gitignore_and_dot_git(tb: Toolbox, workspace: Path) -> None:
    write(workspace, ".gitignore", "build/\n*.log\n!keep.log\n")
    write(workspace, ".hidden/conf.yml", "token: needle\n")
    write(workspace, ".git/config", "needle = 1\n")
    write(workspace, "build/out.js", "needle\n")
    write(workspace, "debug.log", "needle\n")
    write(workspace, "keep.log", "needle\n")
    write(workspace, "pkg/.gitignore", "local.txt\n")
    write(workspace, "pkg/local.txt", "needle\n")
    write(workspace, "pkg/ok.txt", "needle\n")
    paths = {m["path"] for m in ok(tb.run("grep", {"pattern": "needle"}))["matches"]}
    assert paths == {".hidden/conf.yml", "keep.log", "pkg/ok.txt"}
    # Searching below the root still applies the root's .gitignore.
    write(workspace, "pkg/x.log", "needle\n")
    paths = {m["path"] for m in ok(tb.run("grep", {"pattern": "needle", "path": "pkg"}))["matches"]}
    assert paths == {"pkg/ok.txt"}


def test_gitignore_outside_a_git_repository(tb: Toolbox, workspace: Path) -> None:
    write(workspace, ".gitignore", "*.gen.py\n")
    write(workspace, "a.gen.py", "needle\n")
    write(workspace, "a.py", "needle\n")
    assert not (workspace / ".git").exists()
    assert [m["path"] for m in ok(tb.run("grep", {"pattern": "needle"}))["matches"]] == ["a.py"]


def test_binary_files(tb: Toolbox, workspace: Path) -> None:
    write(workspace, "data.bin", b"needle\x00\x01\x02needle")
    write(workspace, "text.txt", "needle\n")
    out = ok(tb.run("grep", {"pattern": "needle"}))
    assert [m["path"] for m in out["matches"]] == ["text.txt"]
    out = ok(tb.run("grep", {"pattern": "needle", "path": "data.bin"}))
    assert out["matches"] == [] and "binary" in out["note"]


def test_crlf_bom_and_unicode(tb: Toolbox, workspace: Path) -> None:
    write(workspace, "win.txt", "first needle\r\nsecond\r\nneedle last\r\n")
    write(workspace, "bom.txt", "\ufeffneedle at start\n")
    write(workspace, "ünï/日本.txt", "café needle naïve\n")
    out = ok(tb.run("grep", {"pattern": "needle$|^needle"}))
    texts = {(m["path"], m["line"]): m["text"] for m in out["matches"]}
    assert texts == {
        ("win.txt", 1): "first needle",
        ("win.txt", 3): "needle last",
        ("bom.txt", 1): "needle at start",
    }
    assert all("\r" not in m["text"] for m in out["matches"])
    out = ok(tb.run("grep", {"pattern": "CAFÉ", "ignore_case": True}))
    assert out["matches"] == [{"path": "ünï/日本.txt", "line": 1, "text": "café needle naïve"}]


def test_long_lines_are_cut(tb: Toolbox, workspace: Path) -> None:
    write(workspace, "min.js", "var a=1;" + "x" * 5000 + "needle\n")
    (match,) = ok(tb.run("grep", {"pattern": "needle"}))["matches"]
    assert match["text"] == ("var a=1;" + "x" * 5000)[:MAX_LINE_CHARS] + CUT_MARKER


def test_cap_with_exact_total(tb: Toolbox, workspace: Path) -> None:
    for i in range(150):
        write(workspace, f"f{i:03}.txt", f"needle {i}\nneedle again {i}\n", mtime=10_000 + i)
    env = tb.run("grep", {"pattern": "needle"})
    out = ok(env)
    assert len(out["matches"]) == 100 and out["total"] == 300 and out["truncated"] is True
    assert out["files_with_matches"] == 150
    assert [m["path"] for m in out["matches"][:4]] == ["f149.txt"] * 2 + ["f148.txt"] * 2
    assert out["matches"][-1]["path"] == "f100.txt"
    assert "Showing 100 of 300 matching lines" in out["note"]
    assert "Narrow the search" in tb.render(env)


def test_many_matches_in_one_file(tb: Toolbox, workspace: Path) -> None:
    write(workspace, "big.txt", "".join(f"needle {i}\n" for i in range(100_000)))
    out = ok(tb.run("grep", {"pattern": "needle", "context": 2}))
    assert out["total"] == 100_000
    assert sum(not m.get("context") for m in out["matches"]) == 100
    assert out["matches"][-1]["line"] == 100  # context lines are all matches themselves
