"""Background processes: process_output, process_input, process_kill, process_list."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from envelopes import err, ok
from local_tools import Toolbox

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")

ALLOW = {"permissions": {"execute:command": "allow"}}


@pytest.fixture
def shell(make_toolbox: Any) -> Toolbox:
    return make_toolbox(ALLOW)


def _start(tb: Toolbox, command: str, user: str = "default") -> str:
    out = ok(tb.run("exec_cmd", {"command": command, "background": True}, user_id=user))
    assert out["status"] == "running"
    return str(out["process_id"])


def test_output_since_the_last_read(shell: Toolbox) -> None:
    pid = _start(shell, "echo one; sleep 0.5; echo two; echo err >&2")
    time.sleep(0.25)
    first = ok(shell.run("process_output", {"process_id": pid}))
    assert first["status"] == "running"
    assert first["stdout"] == "one\n"
    done = ok(shell.run("process_output", {"process_id": pid, "block": True, "timeout": 10}))
    assert (done["status"], done["exit_code"]) == ("exited", 0)
    assert (done["stdout"], done["stderr"]) == ("two\n", "err\n")
    again = ok(shell.run("process_output", {"process_id": pid}))
    assert (again["stdout"], again["stderr"]) == ("", "")


def test_block_times_out_while_still_running(shell: Toolbox) -> None:
    pid = _start(shell, "sleep 30")
    started = time.monotonic()
    out = ok(shell.run("process_output", {"process_id": pid, "block": True, "timeout": 0.3}))
    assert out["status"] == "running"
    assert time.monotonic() - started < 3
    killed = ok(shell.run("process_kill", {"process_id": pid}))
    assert killed["killed"] is True
    assert killed["status"] == "exited"
    assert killed["signal"] == "SIGKILL"
    again = ok(shell.run("process_kill", {"process_id": pid}))
    assert again["killed"] is False


def test_list_shows_own_processes_only(shell: Toolbox) -> None:
    mine = _start(shell, "sleep 30", user="alice")
    theirs = _start(shell, "sleep 30", user="bob")
    listed = ok(shell.run("process_list", {}, user_id="alice"))["processes"]
    assert [p["process_id"] for p in listed] == [mine]
    assert listed[0]["command"] == "sleep 30"
    assert listed[0]["status"] == "running"
    # Another user's process does not exist for alice: not readable, not killable.
    err(shell.run("process_output", {"process_id": theirs}, user_id="alice"), "NOT_FOUND")
    err(shell.run("process_kill", {"process_id": theirs}, user_id="alice"), "NOT_FOUND")
    err(shell.run("process_input", {"process_id": theirs, "input": "x"}, user_id="alice"),
        "NOT_FOUND")  # fmt: skip


def test_unknown_process_id(shell: Toolbox) -> None:
    message = err(shell.run("process_output", {"process_id": "p999"}), "NOT_FOUND")
    assert "process_list" in message


def test_input_needs_a_background_process_with_stdin(shell: Toolbox) -> None:
    out = ok(shell.run("exec_cmd", {"command": "sleep 2; echo late", "yield_after": 0.2}))
    message = err(
        shell.run("process_input", {"process_id": out["process_id"], "input": "x"}),
        "EXECUTION_ERROR",
    )
    assert "stdin" in message
    done = _start(shell, "true")
    ok(shell.run("process_output", {"process_id": done, "block": True}))
    message = err(shell.run("process_input", {"process_id": done, "input": "x"}), "EXECUTION_ERROR")
    assert "exited" in message


def test_input_answer_and_eof(shell: Toolbox) -> None:
    pid = _start(shell, 'while read -r line; do echo "got $line"; done; echo bye')
    answer = ok(shell.run("process_input", {"process_id": pid, "input": "hello"}))
    assert answer["stdout"] == "got hello\n"
    final = ok(
        shell.run("process_input", {"process_id": pid, "input": "last", "close_stdin": True})
    )
    assert "got last\n" in final["stdout"]
    end = ok(shell.run("process_output", {"process_id": pid, "block": True, "timeout": 5}))
    assert end["status"] == "exited"
    assert (final["stdout"] + end["stdout"]).endswith("bye\n")


def test_input_asks_like_a_command(make_toolbox: Any) -> None:
    tb = make_toolbox({"permissions": {"execute:command": {"*": "ask", "cat": "allow"}}})
    pid = _start(tb, "cat")
    message = err(tb.run("process_input", {"process_id": pid, "input": "hi"}), "PERMISSION_DENIED")
    assert "cat <<< hi" in message


def test_live_process_limit(make_toolbox: Any) -> None:
    tb = make_toolbox({**ALLOW, "limits": {"max_processes": 2}})
    _start(tb, "sleep 30")
    _start(tb, "sleep 30")
    message = err(tb.run("exec_cmd", {"command": "echo hi"}), "EXECUTION_ERROR")
    assert "max_processes" in message


def test_many_lines_between_reads_are_bounded(shell: Toolbox) -> None:
    pid = _start(shell, "seq 1 20000")
    out = ok(shell.run("process_output", {"process_id": pid, "block": True, "timeout": 10}))
    lines = out["stdout"].splitlines()
    assert len(lines) <= 1000  # half the output line limit per stream and read
    assert int(lines[0]) > 1  # the oldest lines were dropped from memory ...
    assert "dropped from memory" in out["note"]
    assert "wait: call process_output again" in out["note"]
    saved = out["note"].split("all of it is in ")[1].split(";")[0]
    assert Path(saved).read_text().splitlines()[0] == "1"  # ... but saved whole
    seen = lines
    while "wait" in (out.get("note") or ""):
        out = ok(shell.run("process_output", {"process_id": pid}))
        seen += out["stdout"].splitlines()
    assert seen[-1] == "20000"
    assert [int(x) for x in seen] == list(range(int(seen[0]), 20001))


def test_sessions_of_one_user_are_apart_and_end_with_their_commands(shell: Toolbox) -> None:
    """A transport's sessions (MCP over HTTP) share the user's permissions, not their
    processes; ending a session ends what it left running."""
    needle = "sleep 30.7713"
    start = {"command": needle, "background": True}
    pid = ok(shell.run("exec_cmd", start, session_id="s1"))["process_id"]

    def listed(session: str | None) -> list[str]:
        return [
            p["process_id"]
            for p in ok(shell.run("process_list", {}, session_id=session))["processes"]
        ]

    assert listed("s1") == [pid]
    for session in ("s2", None):
        assert listed(session) == []
        err(shell.run("process_kill", {"process_id": pid}, session_id=session), "NOT_FOUND")
    assert _running(needle)
    shell.end_session("default", "s1")
    assert not _running(needle)
    assert listed("s1") == []


def _running(needle: str) -> bool:
    for proc in psutil.process_iter(["cmdline", "status"]):
        if needle in " ".join(proc.info["cmdline"] or []):
            return proc.info["status"] != psutil.STATUS_ZOMBIE
    return False


def test_a_read_in_one_session_does_not_vouch_for_another(shell: Toolbox, workspace: Path) -> None:
    target = workspace / "f.txt"
    target.write_text("one\n")
    ok(shell.run("read_file", {"path": "f.txt"}, session_id="s1"))
    target.write_text("two\n")  # changed behind the model's back
    edit = {"path": "f.txt", "old_string": "two", "new_string": "three"}
    err(shell.run("edit", edit, session_id="s1"), "CONFLICT")
    ok(shell.run("edit", edit, session_id="s2"))  # never read there: the edit reads it
    assert target.read_text() == "three\n"
