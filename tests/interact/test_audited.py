"""Every answer a person gives is audited with the door it came through, who answered
and how they were authenticated."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from envelopes import err, ok
from local_tools.interact.terminal import TerminalAsker


def _answers(tb: Any) -> list[Any]:
    return [r for r in tb.audit.query(limit=20) if r.tool == "answer"]


def test_a_terminal_approval_is_audited_with_its_call(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    tb = make_toolbox(asker=TerminalAsker(io.StringIO("o\n"), io.StringIO()))
    env = tb.run("file_delete", {"path": "a.txt"})
    ok(env)
    [answer] = _answers(tb)
    assert answer.call_id == env["meta"]["call_id"]
    assert answer.transport == "terminal" and answer.outcome == "success"
    assert answer.args == {
        "for_tool": "file_delete",
        "permission": "delete:file",
        "subject": "a.txt",
        "answer": "once",
        "rule": "a.txt",
        "answered_by": "terminal",
        "authenticated": "terminal",
    }
    assert answer.note == "answered through terminal"


def test_an_answered_question_is_audited(make_toolbox: Any) -> None:
    tb = make_toolbox(asker=TerminalAsker(io.StringIO("2\n"), io.StringIO()))
    ok(tb.run("question", {"question": "Which?", "options": ["a", "b"]}))
    [answer] = _answers(tb)
    assert answer.args == {
        "for_tool": "question",
        "question": "Which?",
        "choices": ["b"],
        "text": None,
        "answered_by": "terminal",
        "authenticated": "terminal",
    }


def test_no_answer_in_time_is_audited_as_such(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    tb = make_toolbox()
    tb.runner.asker.timeout = 0.2
    tb.pending.beat("silent", "http://127.0.0.1:1/")
    err(tb.run("file_delete", {"path": "a.txt"}), "PERMISSION_DENIED")
    [answer] = _answers(tb)
    assert (answer.transport, answer.outcome, answer.error_code) == (
        "web console",
        "error",
        "CANCELLED",
    )
    assert answer.note.startswith("no answer: TimeoutError")


def test_nobody_there_leaves_no_answer_row(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    tb = make_toolbox()
    err(tb.run("file_delete", {"path": "a.txt"}), "PERMISSION_DENIED")
    ok(tb.run("question", {"question": "Which?"}))  # handed to the chat
    assert _answers(tb) == []


def test_a_console_answer_is_audited_with_its_session(make_toolbox: Any, workspace: Path) -> None:
    """The console's answer reaches the call through the pending queue, with who
    answered and how: the audit row says so, not just "web console"."""
    import threading
    import time

    (workspace / "a.txt").write_text("x")
    tb = make_toolbox()
    tb.pending.beat("console", "http://127.0.0.1:1/")

    def answer() -> None:
        deadline = time.monotonic() + 10
        while not tb.pending.pending() and time.monotonic() < deadline:
            time.sleep(0.02)
        [item] = tb.pending.pending()
        tb.pending.answer(
            item.id, {"decision": "once"}, "web console (127.0.0.1)", "console-session"
        )

    person = threading.Thread(target=answer)
    person.start()
    ok(tb.run("file_delete", {"path": "a.txt"}))
    person.join()
    [row] = _answers(tb)
    assert row.args["answered_by"] == "web console (127.0.0.1)"
    assert row.args["authenticated"] == "console-session"
    assert row.transport == "web console"
