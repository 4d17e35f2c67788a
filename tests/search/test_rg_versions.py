"""rg's version is asked once per binary and remembered in the state folder.

Real processes: a wrapper script around the real rg logs each `--version` it is asked,
and fresh interpreters look rg up as a server just started would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from local_tools.core.state import STATE_DIR_ENV
from local_tools.search.ripgrep import RG_ENV, Ripgrep

posix_only = pytest.mark.skipif(os.name == "nt", reason="the wrapper is a shell script")

# A fresh interpreter: which rg, its version, and a glob and a grep through it.
CHILD = """
import json, sys
from local_tools.search.engine import get_engine
from local_tools.search.glob_match import PathGlob
from local_tools.search.results import glob_files, grep_lines
from local_tools.search.ripgrep import find_rg
from local_tools.search.scope import Query, scope_in
rg = find_rg()
engine = get_engine()
scope = scope_in(sys.argv[1])
globbed = glob_files(engine, scope, PathGlob("**/*.txt")).files
grepped = [(e.path, e.line) for e in grep_lines(engine, scope, Query("needle")).events]
print(json.dumps([rg and rg.path, rg and list(rg.version), engine.name, globbed, grepped]))
"""


def wrapper(tmp_path: Path, real: str, extra: str = "") -> Path:
    script = tmp_path / "bin" / "rg"
    script.parent.mkdir(exist_ok=True)
    log = tmp_path / "asked.log"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo asked >> "{log}"; fi\n'
        f"{extra}"
        f'exec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    return script


def asked(tmp_path: Path) -> int:
    log = tmp_path / "asked.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def fresh(tmp_path: Path, script: Path, tree: Path) -> list[object]:
    env = {**os.environ, RG_ENV: str(script), STATE_DIR_ENV: str(tmp_path / "state")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    result: list[object] = json.loads(out)
    return result


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    for i in range(5):
        (root / f"f{i}.txt").write_text(f"needle {i}\nhay\n")
        (root / "sub" / f"g{i}.txt").write_text("hay\nneedle\n")
        os.utime(root / f"f{i}.txt", ns=(10**18 + i, 10**18 + i))
    return root


@posix_only
def test_version_is_asked_once_across_processes(
    tmp_path: Path, rg: Ripgrep, small_tree: Path
) -> None:
    script = wrapper(tmp_path, rg.path)
    first = fresh(tmp_path, script, small_tree)
    assert asked(tmp_path) == 1
    second = fresh(tmp_path, script, small_tree)
    assert asked(tmp_path) == 1  # remembered: no `--version` this time
    assert first == second  # same rg, same version, same answers
    assert first[0] == str(script) and first[1] == list(rg.version) and first[2] == "rg"
    assert len(first[3]) == 10 and len(first[4]) == 10  # type: ignore[arg-type]
    saved = json.loads((tmp_path / "state" / "ripgrep-versions.json").read_text())
    assert saved[str(script)]["version"] == list(rg.version)
    assert oct((tmp_path / "state" / "ripgrep-versions.json").stat().st_mode & 0o777) == "0o600"


@posix_only
def test_a_replaced_binary_is_asked_again(tmp_path: Path, rg: Ripgrep, small_tree: Path) -> None:
    script = wrapper(tmp_path, rg.path)
    fresh(tmp_path, script, small_tree)
    # Another file at the same path (what an upgrade does): its size differs.
    wrapper(tmp_path, rg.path, extra=": another build\n")
    fresh(tmp_path, script, small_tree)
    assert asked(tmp_path) == 2


@posix_only
def test_an_old_rg_stays_refused_when_remembered(tmp_path: Path, small_tree: Path) -> None:
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho asked >> "{tmp_path / "asked.log"}"\necho ripgrep 12.1.1\n')
    fake.chmod(0o755)
    for _ in range(2):
        path, version, engine, globbed, grepped = fresh(tmp_path, fake, small_tree)
        assert (path, version, engine) == (None, None, "python")
        assert len(globbed) == 10 and len(grepped) == 10  # type: ignore[arg-type]
    assert asked(tmp_path) == 1


@posix_only
@pytest.mark.parametrize(
    "content",
    ["not json", "[1, 2]", '{"X": {"id": "bad", "version": [99, 0, 0]}}', ""],
)
def test_a_damaged_cache_is_ignored(
    tmp_path: Path, rg: Ripgrep, small_tree: Path, content: str
) -> None:
    script = wrapper(tmp_path, rg.path)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "ripgrep-versions.json").write_text(content.replace("X", str(script)))
    first = fresh(tmp_path, script, small_tree)
    assert first[1] == list(rg.version)
    assert asked(tmp_path) == 1
    fresh(tmp_path, script, small_tree)
    assert asked(tmp_path) == 1
