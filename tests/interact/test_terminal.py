"""The terminal asker, driven through real pipes and a real pseudo-terminal."""

from __future__ import annotations

import asyncio
import io
import os
import select
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from local_tools.core.errors import PermissionDenied
from local_tools.interact.base import Asker, PermissionRequest
from local_tools.interact.terminal import TerminalAsker, parse_answer, render_request
from local_tools.security.approvals import ApprovalStore
from local_tools.security.policy import Policy

REQUEST = PermissionRequest(
    tool="exec_cmd",
    permission="execute:command",
    subject="rm -rf build",
    user_id="alice",
    summary="clean the build",
)


class Pipes:
    """An asker wired to real OS pipes: we type into `answers`, read `prompts`."""

    def __init__(self) -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        self.stdin = os.fdopen(in_r, "r", encoding="utf-8")
        self.answers = os.fdopen(in_w, "w", encoding="utf-8")
        self.stderr = os.fdopen(out_w, "w", encoding="utf-8")
        self.prompts = os.fdopen(out_r, "r", encoding="utf-8")
        self.asker = TerminalAsker(self.stdin, self.stderr)

    def type(self, text: str, *, close: bool = False) -> None:
        self.answers.write(text)
        self.answers.flush()
        if close:
            self.answers.close()

    def output(self) -> str:
        self.stderr.close()
        return self.prompts.read()

    def close(self) -> None:
        for stream in (self.stdin, self.answers, self.stderr, self.prompts):
            if not stream.closed:
                stream.close()


@pytest.fixture
def pipes() -> Iterator[Pipes]:
    p = Pipes()
    yield p
    p.close()


@pytest.mark.parametrize(
    ("typed", "answer"),
    [
        ("o\n", "once"),
        ("once\n", "once"),
        ("  A  \n", "always"),
        ("always\n", "always"),
        ("d\n", "deny"),
        ("deny\n", "deny"),
        ("\n", "deny"),
        ("yes\n", "deny"),  # anything unrecognised is a deny
        ("oa\n", "deny"),
    ],
)
def test_answers_over_a_pipe(pipes: Pipes, typed: str, answer: str) -> None:
    pipes.type(typed)
    assert asyncio.run(pipes.asker.ask(REQUEST)) == answer
    shown = pipes.output()
    assert "[o]nce / [a]lways / [d]eny" in shown
    assert "execute:command" in shown
    assert "rm -rf build" in shown
    assert "alice" in shown
    assert "clean the build" in shown
    assert f"-> {answer}" in shown


def test_eof_is_deny(pipes: Pipes) -> None:
    pipes.type("", close=True)
    assert asyncio.run(pipes.asker.ask(REQUEST)) == "deny"


def test_control_characters_in_the_subject_are_escaped(pipes: Pipes) -> None:
    sneaky = PermissionRequest(
        "exec_cmd", "execute:command", "rm -rf ~ \r\x1b[2Kls\u202e", "alice", "a\nb"
    )
    pipes.type("d\n")
    asyncio.run(pipes.asker.ask(sneaky))
    shown = pipes.output()
    assert "\x1b" not in shown
    assert "\r" not in shown
    assert "\u202e" not in shown
    assert r"rm -rf ~ \r\x1b[2Kls\u202e" in shown
    assert "  summary:    a\n            | b\n" in shown  # a line of the summary's, marked


def test_the_event_loop_keeps_running_while_waiting(pipes: Pipes) -> None:
    async def scenario() -> tuple[str, int]:
        ticks = 0
        task = asyncio.create_task(pipes.asker.ask(REQUEST))
        for _ in range(5):
            await asyncio.sleep(0.01)
            ticks += 1
        assert not task.done()  # still waiting for the human
        pipes.type("o\n")
        return await task, ticks

    assert asyncio.run(scenario()) == ("once", 5)


def test_concurrent_questions_do_not_interleave(pipes: Pipes) -> None:
    second = PermissionRequest("exec_cmd", "execute:command", "make clean", "alice")

    async def scenario() -> list[str]:
        tasks = [asyncio.create_task(pipes.asker.ask(r)) for r in (REQUEST, second)]
        await asyncio.sleep(0.05)
        pipes.type("o\nd\n")
        return await asyncio.gather(*tasks)

    assert sorted(asyncio.run(scenario())) == ["deny", "once"]
    shown = pipes.output()
    first_answer = shown.index("-> ")
    second_prompt = shown.index("permission needed", shown.index("permission needed") + 1)
    # the second prompt starts only after the first was answered
    assert second_prompt > first_answer


def test_policy_with_a_terminal_asker(pipes: Pipes, tmp_path: Path) -> None:
    store = ApprovalStore(tmp_path / "approvals.json")
    policy = Policy(approvals=store)
    pipes.type("a\n")
    asyncio.run(policy.authorize("alice", "delete:file", ["old.txt"], pipes.asker, tool="rm"))
    assert [a.subject for a in ApprovalStore(tmp_path / "approvals.json").entries()] == ["old.txt"]
    pipes.type("d\n")
    with pytest.raises(PermissionDenied, match="declined"):
        asyncio.run(policy.authorize("alice", "delete:file", ["x.txt"], pipes.asker, tool="rm"))


def test_it_is_an_asker() -> None:
    assert isinstance(TerminalAsker(), Asker)


# --- availability ------------------------------------------------------------------


def test_pipes_and_string_streams_are_not_a_terminal(pipes: Pipes) -> None:
    assert TerminalAsker.available(pipes.stdin, pipes.stderr) is False
    assert TerminalAsker.available(io.StringIO(), io.StringIO()) is False


def test_closed_stream_is_not_available() -> None:
    stream = io.StringIO()
    stream.close()
    assert TerminalAsker.available(stream, stream) is False


@pytest.mark.skipif(sys.platform == "win32", reason="pty is POSIX-only")
def test_a_real_pty_is_available_and_answers() -> None:
    import pty

    master, slave = pty.openpty()
    tty_in: TextIO = os.fdopen(os.dup(slave), "r", encoding="utf-8")
    tty_out: TextIO = os.fdopen(slave, "w", encoding="utf-8")
    try:
        assert TerminalAsker.available(tty_in, tty_out) is True
        assert TerminalAsker.available(tty_in, io.StringIO()) is False  # both must be TTYs
        os.write(master, b"a\n")
        assert asyncio.run(TerminalAsker(tty_in, tty_out).ask(REQUEST)) == "always"
        shown = b""
        while select.select([master], [], [], 0.5)[0]:
            chunk = os.read(master, 65536)
            if not chunk:
                break
            shown += chunk
        assert b"[o]nce / [a]lways / [d]eny" in shown
        assert b"rm -rf build" in shown
    finally:
        tty_in.close()
        tty_out.close()
        os.close(master)


# --- pure helpers ------------------------------------------------------------------


def test_parse_answer() -> None:
    assert [parse_answer(x) for x in ("o", "A\n", "Deny", "", "nope")] == [
        "once",
        "always",
        "deny",
        "deny",
        "deny",
    ]


def test_render_for_the_whole_permission() -> None:
    text = render_request(PermissionRequest("web_fetch", "network:outbound", None, "bob"))
    assert "(the whole permission)" in text
    assert "summary" not in text
