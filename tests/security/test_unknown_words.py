"""Class 1 of issue #20: commands the parser cannot read exactly never run unasked.

The default rules allow read-only commands (find, sort, git log, ...) by their text
before bash expands it. A word whose value is only known at run time (an expansion,
a brace, a tilde form, a pattern that may match a file named like an option, the
words xargs reads) would let `find . $x touch PWN \\;` with x=-exec pass as `find *`.
Each attack here runs through the real tool (bash, default settings, nobody to ask)
and asserts its effect did not happen; the controls show read-only work still runs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from local_tools import Toolbox
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.security.approvals import ApprovalStore
from local_tools.security.patterns import UNPARSED_PREFIX, suggest_pattern
from local_tools.security.policy import Policy
from local_tools.shell.analysis import analyze

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("b\na\n")
    (root / "keep.txt").write_text("keep\n")
    (root / "src").mkdir()
    (root / "src" / "x.txt").write_text("x\n")
    return root


@pytest.fixture
def tb(ws: Path, tmp_path: Path) -> Toolbox:
    box = Toolbox(ws, state_dir=tmp_path / "state", audit=False, plugins=False)
    yield box
    box.close()


@pytest.fixture
def repo(ws: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(ws.parent)}
    for args in (
        ["init", "-q"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "c"],
    ):
        subprocess.run(["git", "-C", str(ws), *args], check=True, env=env, capture_output=True)
    return ws


def run(tb: Toolbox, command: str) -> dict:
    return tb.run("exec_cmd", {"command": command})


def asked(result: dict) -> str:
    """The subject the call had to ask for (no asker: the call is denied)."""
    assert result["success"] is False, result
    assert result["error"]["error_code"] == "PERMISSION_DENIED", result
    return str(result["error"]["details"]["subject"])


# --- the examples and variants: each would write or delete a file -------------

WRITES_PWN = [
    # the examples
    "x=-exec; find . -maxdepth 0 $x touch PWN \\;",
    "find . -maxdepth 0 ${x:--exec} touch PWN \\;",
    "find . -maxdepth 0 {-exec,} touch PWN \\;",
    "sort {-o,PWN} a.txt",
    # parameter expansions, quoted or not
    'x=-exec; find . -maxdepth 0 "$x" touch PWN \\;',
    "x=-exec; find . -maxdepth 0 ${x} touch PWN \\;",
    "x=-o; sort $x PWN a.txt",
    "x='-o PWN'; sort $x a.txt",  # word splitting: one word becomes two
    "set -- -exec; find . -maxdepth 0 $1 touch PWN \\;",
    'find . -maxdepth 0 ${x-"-exec"} touch PWN \\;',
    "find . -maxdepth 0 ${x:+-exec}${x:--exec} touch PWN \\;",
    # command substitution, both spellings, and inside a word
    "find . -maxdepth 0 $(printf %s -exec) touch PWN \\;",
    "find . -maxdepth 0 `printf %s -exec` touch PWN \\;",
    "find . -maxdepth 0 -e$(printf %s xe)c touch PWN \\;",
    'find . -maxdepth 0 "$(printf %s -exec)" touch PWN \\;',
    # brace expansion: lists, sequences, empty alternatives, nested, quoted parts
    "sort a.txt {-o,PWN}",
    "sort {-o,PWN,a.txt}",
    "sort -{o..o} PWN a.txt",
    "find . -maxdepth 0 -e{x,}ec touch PWN \\;",
    "find . -maxdepth 0 {{-exec,},} touch PWN \\;",
    'find . -maxdepth 0 {"-exec",} touch PWN \\;',
    "find . -maxdepth 0 {'-exec',} touch PWN \\;",
    # tilde forms other than ~ and ~/: ~- is $OLDPWD, ~+ is $PWD
    "OLDPWD=-exec; find . -maxdepth 0 ~- touch PWN \\;",
    # a pattern in an option's place
    "find . -maxdepth 0 -ex*c touch PWN \\;",
    # a wrapper's option value or operand split into more words: the wrapped command
    # is not the one the text shows (`timeout 1 touch PWN ls`)
    "t='1 touch PWN'; timeout $t ls",
    "n='1 touch PWN'; nice -n $n ls",
    "t='1 touch PWN'; timeout -s KILL $t cat a.txt",
    # xargs hands its command words read at run time
    "printf '%s\\n' -oPWN a.txt | xargs sort",
    "printf '%s\\n' -o PWN a.txt | xargs -n 3 sort",
    # quoting and escapes bash removes are read exactly, so the rules see -exec / -o
    "find . -maxdepth 0 -ex''ec touch PWN \\;",
    "find . -maxdepth 0 $'-exec' touch PWN \\;",
    "find . -maxdepth 0 -e\\xec touch PWN \\;",
    'find . -maxdepth 0 "-exec" touch PWN \\;',
    "find . -maxdepth 0 -e'x'\"e\"c touch PWN \\;",
    "find . -maxdepth 0 $'\\x2dexec' touch PWN \\;",
    "sort $'-\\157' PWN a.txt",
    "sort -r''o PWN a.txt",
]


@pytest.mark.parametrize("command", WRITES_PWN)
def test_unknown_words_never_run_unasked(tb: Toolbox, ws: Path, command: str) -> None:
    asked(run(tb, command))
    assert not (ws / "PWN").exists()


def test_a_brace_that_adds_find_delete_asks(tb: Toolbox, ws: Path) -> None:
    for command in (
        "find . -name keep.txt {-delete,}",
        "find . -name keep.txt -de{l,}ete",
        "find . -name keep.txt -{delete,delete}",
    ):
        asked(run(tb, command))
        assert (ws / "keep.txt").exists(), command


def test_git_log_output_in_braces_asks(tb: Toolbox, repo: Path) -> None:
    for command in (
        "git log --outp{ut,ut}=PWN -1",
        "git log --output={PWN,PWN} -1",
        "x=--output=PWN; git log $x -1",
        "git log $(printf %s --output=PWN) -1",
    ):
        asked(run(tb, command))
        assert not (repo / "PWN").exists(), command


def test_a_file_named_like_an_option_is_not_passed_by_a_pattern(tb: Toolbox, ws: Path) -> None:
    # write_file is allowed by default: the model can plant these names itself
    for name in ("-oPWN", "-delete", "--output=PWN"):
        assert tb.run("write_file", {"path": name, "content": ""})["success"], name
    for command in (
        "sort *",  # sort -oPWN a.txt ...: writes PWN
        "sort ?oPWN a.txt",
        "sort [-]oPWN a.txt",
        "find . -maxdepth 1 -name keep.txt -de*",  # find ... -delete
        "find . -maxdepth 1 -name keep.txt -[d]elete",
        "find * -name keep.txt",  # find -delete ...: deletes
    ):
        asked(run(tb, command))
        assert not (ws / "PWN").exists(), command
        assert (ws / "keep.txt").exists(), command


def test_git_log_with_a_pattern_beside_an_option_file(tb: Toolbox, repo: Path) -> None:
    assert tb.run("write_file", {"path": "--output=PWN", "content": ""})["success"]
    asked(run(tb, "git log -1 *"))
    assert not (repo / "PWN").exists()


@pytest.mark.parametrize(
    "command",
    [
        "ls $((1))",
        "ls $[1]",
        "echo $HOME",
        'echo "$USER"',
        "ls ${PWD}",
        "ls ~root",
        "ls ~+",
        "ls $'\\q'",  # an escape the parser does not model
        "cat a.txt > $f",
        "cat < $f",
        "cat a.txt 2>&$fd",
        "ls {a,b}.txt",
        "ls {1..2}",
        "ls -d a=~/x",  # bash expands a tilde after = in an assignment-like word
        "wc -l $(ls)",
        "cat `ls`",
    ],
)
def test_every_kind_of_unknown_word_is_not_understood(tb: Toolbox, command: str) -> None:
    subject = asked(run(tb, command))
    assert subject == UNPARSED_PREFIX + command
    # the parts read exactly (`ls` in `wc -l $(ls)`) are checked as well
    assert analyze(command, background=False).subjects[0] == UNPARSED_PREFIX + command


# --- what still runs without asking ---------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la",
        "ls *.txt",
        "ls src/*.txt",
        "cat a.txt",
        "cat *.txt",
        "wc -l *.txt src/*.txt",
        "head -n 1 a.txt",
        "find . -name '*.txt'",
        "find . -name \\*.txt -type f",
        "sort a.txt",
        "sort src/*.txt",  # a pattern that cannot start with '-'
        "grep -n a *.txt",
        "echo '{a,b}' '$HOME' \\{a,b\\} \"~root\"",  # quoted: nothing expands
        "cat a.txt | sort | head -1",
        "diff <(sort a.txt) <(sort a.txt)",  # a process substitution is a /dev/fd path
        "find . -name '*.txt' -print",
        "printf 'a b' | xargs echo",  # xargs into echo: the names are only printed
    ],
)
def test_read_only_commands_still_run_unasked(tb: Toolbox, ws: Path, command: str) -> None:
    result = run(tb, command)
    assert result["success"] is True, (command, result)
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "keep.txt", "src"]


def test_git_log_still_runs_unasked(tb: Toolbox, repo: Path) -> None:
    for command in ("git log -1", "git log --format=%H -1", "git status --short"):
        assert run(tb, command)["success"] is True, command


# --- "allow always" never approves more than the exact text ---------------------------


class Always:
    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.requests.append(request)
        return "always"


def test_allow_always_for_eval_does_not_allow_another_eval(tb: Toolbox, ws: Path) -> None:
    (ws / "y").mkdir()
    asker = Always()
    result = tb.run("exec_cmd", {"command": 'eval "touch x"'}, asker=asker)
    assert result["success"] is True, result
    assert (ws / "x").exists()
    # the whole line, not understood, then the command eval runs, read exactly
    first, second = asker.requests
    assert first.subject == UNPARSED_PREFIX + 'eval "touch x"'
    assert first.suggestion is None  # no pattern is offered for it
    assert second.subject == "touch x"
    # remembered exactly: the same command runs, another is asked
    (ws / "x").unlink()
    assert tb.run("exec_cmd", {"command": 'eval "touch x"'})["success"] is True
    assert (ws / "x").exists()
    asked(run(tb, 'eval "rm -rf y"'))
    assert (ws / "y").is_dir()
    asked(run(tb, "eval rm -rf y"))
    asked(run(tb, 'eval "touch x" ; rm -rf y'))
    assert (ws / "y").is_dir()


def test_a_broad_allow_still_asks_for_what_an_unknown_word_hides(ws: Path, tmp_path: Path) -> None:
    config = {"permissions": {"execute:command": "allow"}}
    box = Toolbox(ws, config, state_dir=tmp_path / "state2", audit=False, plugins=False)
    try:
        (ws / "d").mkdir()
        for command in ("echo $(rm -rf d)", "ls {a,b} `rm -rf d`", 'eval "rm -rf d"'):
            assert asked(run(box, command)) == "rm -rf d"
            assert (ws / "d").is_dir()
    finally:
        box.close()


def test_the_denial_message_suggests_only_the_exact_text(tb: Toolbox) -> None:
    result = run(tb, 'eval "touch x"')
    message = result["error"]["message"]
    assert '"(not *"' not in message
    assert '(not understood) eval \\"touch x\\"' in message  # TOML-quoted exact subject
    # with * or ? no rule names the command alone: none is suggested
    message = run(tb, "ls $(echo *)")["error"]["message"]
    assert "(not understood) ls" not in message.partition("Add to")[2]
    assert "only the user can approve it" in message


def test_no_pattern_is_suggested_for_a_described_subject() -> None:
    for subject in (
        UNPARSED_PREFIX + 'eval "touch x"',
        UNPARSED_PREFIX + "git status $x",
        "(git in a repository whose config runs commands: core.fsmonitor) git status",
    ):
        assert suggest_pattern("execute:command", subject) == subject
    assert suggest_pattern("external:file", "(unknown path) $HOME/.ssh/x") == (
        "(unknown path) $HOME/.ssh/x"
    )
    assert suggest_pattern("execute:command", "npm test --watch") == "npm test *"  # unchanged


def test_a_stored_pattern_for_a_command_not_understood_is_read_verbatim(tmp_path: Path) -> None:
    # Older versions suggested "(not *" and stored it as a pattern: read from such a
    # file, it must not allow every command not understood.
    path = tmp_path / "approvals.json"
    entries = [
        {"user_id": "u", "permission": "execute:command", "subject": s, "pattern": True}
        for s in ("(not *", "npm test *")
    ]
    path.write_text(json.dumps({"version": 1, "approvals": entries}))
    policy = Policy(approvals=ApprovalStore(path))
    decision = policy.evaluate("u", "execute:command", UNPARSED_PREFIX + 'eval "rm -rf ~"')
    assert decision.action == "ask"
    assert policy.evaluate("u", "execute:command", "(not *").action == "allow"  # verbatim
    assert policy.evaluate("u", "execute:command", "npm test --watch").action == "allow"
    # and a new one is never stored as a pattern
    policy.approvals.approve("u", "execute:command", UNPARSED_PREFIX + "ls *", pattern=True)
    [new] = [a for a in policy.approvals.entries() if a.subject == UNPARSED_PREFIX + "ls *"]
    assert not new.pattern


def test_the_exact_text_approved_always_is_matched_verbatim() -> None:
    policy = Policy()
    subject = UNPARSED_PREFIX + "ls $(echo *)"
    asyncio.run(
        policy.authorize("u", "execute:command", [subject], _Script("always"), tool="exec_cmd")
    )
    assert policy.evaluate("u", "execute:command", subject).action == "allow"
    other = UNPARSED_PREFIX + "ls $(echo x; rm -rf ~; echo *)"
    assert policy.evaluate("u", "execute:command", other).action == "ask"


class _Script:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer

    async def ask(self, request: PermissionRequest) -> Answer:
        return self.answer
