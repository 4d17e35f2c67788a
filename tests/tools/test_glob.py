"""glob through the runner, with ripgrep's file walk and with os.scandir."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.search.engine import ENGINE_ENV
from local_tools.search.ripgrep import find_rg
from local_tools.tools import builtin_tools
from local_tools.tools.glob import MAX_FILES, glob
from local_tools.tools.grep import grep

EXTRA = [] if "glob" in {t.name for t in builtin_tools()} else [grep, glob]
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


def touch(root: Path, rel: str, mtime: int | None = None, data: str = "x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def project(workspace: Path) -> Path:
    files = [
        "pyproject.toml",
        "src/app.py",
        "src/test_app.py",
        "src/pkg/test_deep.py",
        "src/pkg/mod.py",
        "tests/test_top.py",
        "web/a.ts",
        "web/b.tsx",
        "web/c.js",
        "docs/index.md",
    ]
    for n, rel in enumerate(files):
        touch(workspace, rel, mtime=1_000 + n)
    return workspace


def files(tb: Toolbox, pattern: str, **args: Any) -> list[str]:
    return ok(tb.run("glob", {"pattern": pattern, **args}))["files"]


# -- normal use ---------------------------------------------------------------------


def test_double_star_patterns(tb: Toolbox, project: Path) -> None:
    assert files(tb, "**/*.py") == [
        "tests/test_top.py",
        "src/pkg/mod.py",
        "src/pkg/test_deep.py",
        "src/test_app.py",
        "src/app.py",
    ]
    assert files(tb, "src/**/test_*.py") == ["src/pkg/test_deep.py", "src/test_app.py"]
    assert files(tb, "*.{ts,tsx}") == ["web/b.tsx", "web/a.ts"]
    assert files(tb, "*.py") == files(tb, "**/*.py")  # no '/': any depth
    assert files(tb, "src/*.py") == ["src/test_app.py", "src/app.py"]
    assert files(tb, "/*.toml") == ["pyproject.toml"]
    assert files(tb, "**/*.ts,!web/b*") == ["web/a.ts"]


def test_path_and_output_shape(tb: Toolbox, project: Path) -> None:
    out = ok(tb.run("glob", {"pattern": "*.py", "path": "src/pkg"}))
    assert out == {
        "files": ["src/pkg/mod.py", "src/pkg/test_deep.py"],
        "total": 2,
        "truncated": False,
    }
    assert files(tb, "pkg/*.py", path="src") == ["src/pkg/mod.py", "src/pkg/test_deep.py"]
    absolute = str(project / "src" / "**" / "*.py")
    assert files(tb, absolute) == files(tb, "src/**/*.py")


def test_rendering(tb: Toolbox, project: Path) -> None:
    assert tb.render(tb.run("glob", {"pattern": "*.md"})) == "docs/index.md"
    assert tb.render(tb.run("glob", {"pattern": "*.rs"})) == "No files found."


def test_alias(tb: Toolbox, project: Path) -> None:
    assert ok(tb.run("list_files", {"pattern": "*.md"}))["files"] == ["docs/index.md"]


# -- permissions ----------------------------------------------------------------------


def test_read_denied(make_toolbox: Any, project: Path, engine: str) -> None:
    tb = make_toolbox({"permissions": {"read:file": "deny"}}, tools=EXTRA)
    err(tb.run("glob", {"pattern": "*"}), "PERMISSION_DENIED")


def test_denied_files_hidden_but_asked_ones_listed(
    make_toolbox: Any, project: Path, engine: str
) -> None:
    touch(project, "secrets/key.pem")
    touch(project, ".env")
    tb = make_toolbox(
        {"permissions": {"read:file": {"*": "allow", "secrets/*": "deny"}}}, tools=EXTRA
    )
    out = ok(tb.run("glob", {"pattern": "*"}))
    assert ".env" in out["files"]  # a name, not contents: .env asks, it is not denied
    assert "secrets/key.pem" not in out["files"]
    assert "1 matching file(s) are hidden" in out["note"]


def test_outside_the_workspace(tb: Toolbox, project: Path) -> None:
    err(tb.run("glob", {"pattern": "*", "path": "/etc"}), "PERMISSION_DENIED")
    err(tb.run("glob", {"pattern": "*", "path": ".."}), "PERMISSION_DENIED")


def test_symlinks_are_not_followed(tb: Toolbox, project: Path, tmp_path: Path) -> None:
    touch(tmp_path / "outside", "secret.py")
    (project / "escape").symlink_to(tmp_path / "outside", target_is_directory=True)
    (project / "alias.py").symlink_to(project / "src" / "app.py")
    (project / "srclink").symlink_to(project / "src", target_is_directory=True)
    listed = files(tb, "**/*.py")
    assert not any(p.startswith(("escape/", "srclink/")) or p == "alias.py" for p in listed)
    assert len(listed) == 5
    err(tb.run("glob", {"pattern": "*", "path": "escape"}), "PERMISSION_DENIED")


# -- invalid input --------------------------------------------------------------------


def test_bad_arguments(tb: Toolbox, project: Path) -> None:
    assert "unclosed character class" in err(tb.run("glob", {"pattern": "[ab"}), "INVALID_INPUT")
    assert "'..'" in err(tb.run("glob", {"pattern": "../*.py"}), "INVALID_INPUT")
    err(tb.run("glob", {"pattern": "{a,b"}), "INVALID_INPUT")
    err(tb.run("glob", {"pattern": ""}), "INVALID_INPUT")
    err(tb.run("glob", {}), "INVALID_INPUT")
    assert "is a file" in err(
        tb.run("glob", {"pattern": "*", "path": "src/app.py"}), "INVALID_INPUT"
    )


# -- not found ------------------------------------------------------------------------


def test_missing_path(tb: Toolbox, project: Path) -> None:
    err(tb.run("glob", {"pattern": "*", "path": "nowhere"}), "NOT_FOUND")


# -- timeout --------------------------------------------------------------------------


def test_timeout(make_toolbox: Any, workspace: Path, engine: str) -> None:
    for i in range(3000):
        touch(workspace, f"d{i % 30}/f{i}.txt")
    quick = dataclasses.replace(glob, name="glob_quick_timeout", aliases=(), timeout=0.001)
    tb = make_toolbox(tools=[quick])
    err(tb.run("glob_quick_timeout", {"pattern": "**/*.txt"}), "TIMEOUT")


# -- edge cases -----------------------------------------------------------------------


def test_empty_folder(tb: Toolbox, workspace: Path) -> None:
    (workspace / "empty").mkdir()
    assert ok(tb.run("glob", {"pattern": "*", "path": "empty"})) == {
        "files": [],
        "total": 0,
        "truncated": False,
    }


def test_hidden_gitignore_dot_git_and_folders(tb: Toolbox, workspace: Path) -> None:
    touch(workspace, ".gitignore", data="node_modules/\n*.pyc\ndist/**\n!dist/keep.js\n")
    for rel in [
        ".github/workflows/ci.yml",
        ".hidden.py",
        ".git/config",
        ".git/hooks/pre-commit.py",
        "node_modules/x/index.js",
        "a.pyc",
        "dist/drop.js",
        "dist/keep.js",
        "lib/.gitignore",
        "lib/own.log",
        "lib/code.py",
    ]:
        touch(workspace, rel)
    (workspace / "lib" / ".gitignore").write_text("*.log\n")
    (workspace / "empty_folder").mkdir()
    listed = set(files(tb, "**"))
    assert listed == {
        ".gitignore",
        ".github/workflows/ci.yml",
        ".hidden.py",
        "dist/keep.js",
        "lib/.gitignore",
        "lib/code.py",
    }
    assert set(files(tb, "*", path="lib")) == {"lib/.gitignore", "lib/code.py"}


def test_gitignore_outside_a_git_repository(tb: Toolbox, workspace: Path) -> None:
    touch(workspace, ".gitignore", data="build/\n")
    touch(workspace, "build/out.py")
    touch(workspace, "main.py")
    assert files(tb, "*.py") == ["main.py"]


def test_unicode_names(tb: Toolbox, workspace: Path) -> None:
    touch(workspace, "données/résumé.md")
    touch(workspace, "日本/テスト.md")
    assert set(files(tb, "*.md")) == {"données/résumé.md", "日本/テスト.md"}
    assert files(tb, "日本/*") == ["日本/テスト.md"]


def test_cap_newest_first_over_all_matches(tb: Toolbox, workspace: Path) -> None:
    for i in range(250):
        touch(workspace, f"batch{i % 5}/f{i:03}.log", mtime=5_000 + i)
    os.utime(workspace / "batch0/f000.log", (9_999, 9_999))  # the oldest name, newest file
    env = tb.run("glob", {"pattern": "*.log"})
    out = ok(env)
    assert len(out["files"]) == MAX_FILES and out["total"] == 250 and out["truncated"] is True
    assert out["files"][:3] == ["batch0/f000.log", "batch4/f249.log", "batch3/f248.log"]
    assert out["files"][-1] == "batch1/f151.log"
    assert "150 more exist" in out["note"] and "Narrow" in out["note"]
    assert tb.render(env).splitlines()[-1].startswith("Showing the 100 most recently modified")
