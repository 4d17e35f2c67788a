"""No pattern can freeze the process (issue: "Security, second pass", High).

A backtracking regex runs inside the regex engine with the interpreter lock held: no
tool timeout can fire and an MCP or HTTP server stops answering everyone. Each family
of pattern that used to backtrack exponentially runs here in a child process with a
deadline, so a regression fails the test instead of hanging the suite: on the old code
each of these ran for minutes or more (the glob family never returned), except
read_many_files, whose per-folder fnmatch was already linear: it is kept so it stays so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Seconds a child may take: generous for a loaded CI machine; the fixed code answers
# in well under one, the old code did not answer within an hour.
DEADLINE = 60
EVIL_GLOB = "**/" + "*a" * 14 + "*b/x"
LONG_NAME = "a" * 40


def _run(workspace: Path, state: Path, script: str, engine: str = "") -> dict:
    """Run `script` (which prints one JSON envelope) with a Toolbox `tb` on workspace."""
    prelude = textwrap.dedent(
        f"""
        import json, sys
        from local_tools import Toolbox
        tb = Toolbox({str(workspace)!r}, state_dir={str(state)!r}, audit=False)
        """
    )
    env = {**os.environ, "LOCAL_TOOLS_SEARCH_ENGINE": engine} if engine else dict(os.environ)
    try:
        done = subprocess.run(
            [sys.executable, "-c", prelude + textwrap.dedent(script)],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the call did not return within {DEADLINE} s: the pattern froze it")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    deep = ws / "src" / LONG_NAME
    deep.mkdir(parents=True)
    (deep / "x").write_text("needle\n")
    (ws / "src" / f"{LONG_NAME}.txt").write_text("needle\n")
    (ws / "keep.txt").write_text("needle\n")
    return ws, tmp_path / "state"


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_glob_pattern_of_many_stars_returns(tree: tuple[Path, Path], engine: str) -> None:
    ws, state = tree
    env = _run(
        ws, state, f"print(json.dumps(tb.run('glob', {{'pattern': {EVIL_GLOB!r}}})))", engine
    )
    assert env["success"], env
    assert env["output"]["files"] == []  # no 'b' in the name: nothing matches


def test_glob_pattern_of_many_stars_still_matches(tree: tuple[Path, Path]) -> None:
    """The linear matcher gives the same answers: a name it should match is found."""
    ws, state = tree
    pattern = "**/" + "*a" * 14 + "*/x"
    env = _run(ws, state, f"print(json.dumps(tb.run('glob', {{'pattern': {pattern!r}}})))")
    assert env["success"], env
    assert env["output"]["files"] == [f"src/{LONG_NAME}/x"]


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_grep_include_of_many_stars_returns(tree: tuple[Path, Path], engine: str) -> None:
    ws, state = tree
    script = f"print(json.dumps(tb.run('grep', {{'pattern': 'needle', 'include': {EVIL_GLOB!r}}})))"
    env = _run(ws, state, script, engine)
    assert env["success"], env
    assert env["output"]["total"] == 0  # no file name has a 'b' after the a's


def test_read_many_files_glob_of_many_stars_returns(tree: tuple[Path, Path]) -> None:
    ws, state = tree
    script = f"print(json.dumps(tb.run('read_many_files', {{'paths': [{EVIL_GLOB!r}]}})))"
    env = _run(ws, state, script)
    assert env["error"]["error_code"] == "NOT_FOUND", env  # answered: nothing matches


def test_gitignore_line_of_many_stars_returns(tree: tuple[Path, Path]) -> None:
    """A cloned repository's .gitignore is the attacker's: the fallback engine reads it."""
    ws, state = tree
    (ws / ".gitignore").write_text("*a" * 14 + "*b\n" + "keep.txt\n")
    env = _run(ws, state, "print(json.dumps(tb.run('glob', {'pattern': '**/*'})))", "python")
    assert env["success"], env
    files = env["output"]["files"]
    assert "keep.txt" not in files  # the rules still apply
    assert f"src/{LONG_NAME}/x" in files


def test_edit_with_blank_lines_over_repeated_lines_returns(tmp_path: Path) -> None:
    """Blank lines of old_string over whitespace-only lines that repeat (was 15 s at 3)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    content = ("}\n" + " " * 40 + "\n") * 300 + "{\n" * 100
    (ws / "f.txt").write_text(content)
    old = "}\n\n" * 12 + "{"
    script = f"""
        tb.run('read_file', {{'path': 'f.txt'}})
        print(json.dumps(tb.run('edit', {{'path': 'f.txt', 'old_string': {old!r},
                                         'new_string': 'done'}})))
    """
    env = _run(ws, tmp_path / "state", script)
    assert env["success"], env
    text = (ws / "f.txt").read_text()
    assert text.endswith("}\n" + " " * 40 + "\ndone\n" + "{\n" * 99)


def test_a_long_command_against_the_rules_returns(tmp_path: Path) -> None:
    """The rules' regex backtracked about n**3 on `git *clean* -*f*` (7 KB: 5 s frozen)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    command = "git " + "clean -x " * 4000  # 36 KB
    env = _run(
        ws, tmp_path / "state", f"print(json.dumps(tb.run('exec_cmd', {{'command': {command!r}}})))"
    )
    assert env["error"]["error_code"] == "PERMISSION_DENIED", env["error"]


def test_rule_matching_without_the_regex_gives_the_same_answers() -> None:
    """Long subjects are matched rule by rule in linear time: the same answers."""
    import random

    from local_tools.security.patterns import _wildcard_match, compile_pattern

    rng = random.Random(27)
    for _ in range(3000):
        pattern = "".join(rng.choice("ab *?") for _ in range(rng.randint(0, 8)))
        subject = "".join(rng.choice("ab \n") for _ in range(rng.randint(0, 10)))
        expected = compile_pattern(pattern).fullmatch(subject) is not None
        assert _wildcard_match(pattern, subject) is expected, (pattern, subject)
    for pattern, subject in [("- * *", "-"), ("a * *", "a "), ("a * *", "a")]:
        expected = compile_pattern(pattern).fullmatch(subject) is not None
        assert _wildcard_match(pattern, subject) is expected, (pattern, subject)


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_glob_of_repeated_alternatives_returns(tmp_path: Path, engine: str) -> None:
    """`{a,aa}` k times backtracks like k stars (k=28: 6 s frozen; k=40: hours)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ("a" * 60 + "c")).write_text("needle\n")
    pattern = "{a,aa}" * 40 + "b,!zz"  # the exclusion makes the Python side select
    script = f"print(json.dumps(tb.run('glob', {{'pattern': {pattern!r}}})))"
    env = _run(ws, tmp_path / "state", script, engine)
    assert env["success"], env
    assert env["output"]["files"] == []


def test_the_closest_block_hint_of_a_failed_edit_returns(tmp_path: Path) -> None:
    """difflib's character ratio on repeated text is about cubic (m=1000: no answer in
    120 s); long blocks are compared line by line."""
    ws = tmp_path / "ws"
    ws.mkdir()
    m = 1000
    (ws / "f.txt").write_text(("x\n" * (m - 1) + "z\n") * 2)
    old = "x \n" * m + "z"
    script = f"""
        tb.run('read_file', {{'path': 'f.txt'}})
        print(json.dumps(tb.run('edit', {{'path': 'f.txt', 'old_string': {old!r},
                                         'new_string': 'y'}})))
    """
    env = _run(ws, tmp_path / "state", script)
    assert env["error"]["error_code"] in ("NOT_FOUND", "CONFLICT"), env["error"]


@pytest.mark.parametrize(
    "pattern",
    [
        "^(a|aa)+$",
        "^(.|..)+\\u0000$",
        "^(a+)+$",
        "^(\\\\w+\\\\s?)*!$",
        "a*a*a*a*b",
        "^((?i:a)A*)*$",
        "^((a|aa){0,10}){0,10}$",
    ],
)
def test_a_schema_pattern_that_could_backtrack_is_refused(tmp_path: Path, pattern: str) -> None:
    """check_data_format ran the model's JSON Schema `pattern` with `re` (n=40: minutes)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "d.json").write_text(json.dumps(["a" * 60 + "!", {"k": "a" * 60}]))
    schema = json.dumps({"items": {"type": ["string", "object"], "pattern": pattern}})
    args = {"path": "d.json", "schema": schema}
    script = f"print(json.dumps(tb.run('check_data_format', {args!r})))"
    env = _run(ws, tmp_path / "state", script)
    assert env["error"]["error_code"] == "INVALID_INPUT", env
    assert "exponential" in env["error"]["message"]


def test_ordinary_schema_patterns_still_check(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "d.json").write_text(json.dumps({"id": "ABC-12", "host": "a.example.org", "tag": "x-y"}))
    schema = json.dumps(
        {
            "properties": {
                "id": {"pattern": "^[A-Z]{3}-\\d+$"},
                "host": {"pattern": "^([a-z0-9]+\\.)+[a-z]+$"},
                "tag": {"pattern": "^[a-z]+(-[a-z]+)*$"},
            }
        }
    )
    args = {"path": "d.json", "schema": schema}
    script = f"print(json.dumps(tb.run('check_data_format', {args!r})))"
    env = _run(ws, tmp_path / "state", script)
    assert env["success"], env
    assert env["output"]["valid"] is True
