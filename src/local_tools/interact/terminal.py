"""Ask for permission on the terminal: `[o]nce / [a]lways / [d]eny`.

The prompt goes to stderr so stdout stays clean for the JSON a CLI call prints.
The blocking read runs in a thread so the event loop keeps serving other work.
Anything but a clear yes — EOF, an empty line, a typo — is a deny.

Lines are read from the terminal's file descriptor a byte at a time (`read_line`), so
nothing typed ahead sits in a buffer where a read with a deadline cannot see it; a
review's dialog waits no longer than the review's timeout and then lets go of the
terminal, so the next prompt gets what the person types next.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import select
import sys
import threading
import time
import unicodedata
from typing import TextIO

from local_tools.interact.base import (
    Answer,
    PermissionRequest,
    QuestionAnswer,
    QuestionCancelled,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    checked_answer,
)

__all__ = [
    "TerminalAsker",
    "parse_answer",
    "parse_reply",
    "read_line",
    "render_question",
    "render_request",
    "safe_block",
    "safe_text",
]

_ANSWERS: dict[str, Answer] = {
    "o": "once",
    "once": "once",
    "a": "always",
    "always": "always",
    "d": "deny",
    "deny": "deny",
    "p": "pattern",
    "pattern": "pattern",
}


class TerminalAsker:
    """An `Asker` reading answers from a terminal (or any pair of text streams)."""

    door = "terminal"  # how the audit names who answered
    authenticated = "terminal"  # a person at this process's own terminal

    def __init__(self, input: TextIO | None = None, output: TextIO | None = None) -> None:
        """Streams default to sys.stdin / sys.stderr, looked up when asking."""
        self._input = input
        self._output = output
        # One question at a time: concurrent calls must not interleave prompts.
        # A thread lock, not an asyncio one, because the wait happens in a thread
        # and the asker may outlive one event loop.
        self._lock = threading.Lock()

    @classmethod
    def available(cls, input: TextIO | None = None, output: TextIO | None = None) -> bool:
        """True when both streams are terminals, i.e. someone could answer (not CI)."""
        return _isatty(input or sys.stdin) and _isatty(output or sys.stderr)

    async def ask(self, request: PermissionRequest) -> Answer:
        return await asyncio.to_thread(self._ask_blocking, request)

    async def question(self, request: QuestionRequest) -> QuestionAnswer:
        return await asyncio.to_thread(self._question_blocking, request)

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        # The deadline counts from the call: the dialog (and the wait for the terminal)
        # ends by itself then, so its thread never outlives the review.
        deadline = time.monotonic() + request.timeout
        return await asyncio.to_thread(self._review_blocking, request, deadline)

    def _review_blocking(self, request: ReviewRequest, deadline: float) -> ReviewAnswer:
        from local_tools.interact.terminal_review import review_dialog  # only when reviewing

        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise TimeoutError("the terminal was busy with another question until the deadline")
        try:
            stdin, stderr = self._input or sys.stdin, self._output or sys.stderr
            return review_dialog(stdin, stderr, request, deadline=deadline)
        finally:
            self._lock.release()

    def _question_blocking(self, request: QuestionRequest) -> QuestionAnswer:
        line = self._exchange(render_question(request))
        return parse_reply(request, line)

    def _exchange(self, prompt: str) -> str:
        """Show `prompt`, read one line ("" on EOF or a closed terminal)."""
        stdin = self._input or sys.stdin
        stderr = self._output or sys.stderr
        with self._lock:
            try:
                stderr.write(prompt)
                stderr.flush()
                line = read_line(stdin)
            except (OSError, ValueError):
                line = ""
            if not line.endswith("\n"):
                stderr.write("\n")
                stderr.flush()
        return line

    def _ask_blocking(self, request: PermissionRequest) -> Answer:
        stdin = self._input or sys.stdin
        stderr = self._output or sys.stderr
        with self._lock:
            try:
                stderr.write(render_request(request))
                stderr.flush()
                line = read_line(stdin)
            except (OSError, ValueError):  # closed stream or terminal gone: no answer
                line = ""
            answer = parse_answer(line)
            if answer == "pattern" and request.suggestion is None:
                answer = "deny"  # no pattern was offered: not a yes
            if not line.endswith("\n"):  # EOF: keep the next output on its own line
                stderr.write("\n")
            stderr.write(f"  -> {answer}\n")
            stderr.flush()
        return answer


def read_line(stdin: TextIO, deadline: float | None = None) -> str:
    """One line from `stdin` ("" at EOF), waiting until `deadline` (time.monotonic())
    at most: TimeoutError then.

    A stream with a file descriptor (a terminal, a pipe) is read a byte at a time
    straight from it, so no line typed ahead is left in a buffer that `select` cannot
    see; other streams (StringIO) are read with readline, which does not block.
    """
    fd = _fileno(stdin)
    if fd is None:
        return stdin.readline()
    decoder = codecs.getincrementaldecoder(getattr(stdin, "encoding", None) or "utf-8")(
        errors="replace"
    )
    parts: list[str] = []
    while True:
        # Waiting here, not in read, also serves a descriptor left non-blocking.
        remaining = None if deadline is None else deadline - time.monotonic()
        if (remaining is not None and remaining <= 0) or not _readable(fd, remaining):
            raise TimeoutError("nobody answered at the terminal in time")
        byte = os.read(fd, 1)
        parts.append(decoder.decode(byte, final=not byte))
        if not byte or byte == b"\n":
            return "".join(parts)


def _readable(fd: int, timeout: float | None) -> bool:
    """Whether `fd` has input (or EOF) within `timeout` s (None: however long it takes);
    poll has no FD_SETSIZE limit."""
    if sys.platform != "win32" and hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(1, int(timeout * 1000 + 0.999))))
    return bool(select.select([fd], [], [], timeout)[0])


def _fileno(stream: TextIO) -> int | None:
    """The stream's descriptor when `select` works on it (not on Windows consoles)."""
    if os.name == "nt":
        return None
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # StringIO, a closed or fake stream
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def parse_answer(line: str) -> Answer:
    return _ANSWERS.get(line.strip().lower(), "deny")


def render_question(request: QuestionRequest) -> str:
    lines = ["", f"local-tools: {safe_text(request.tool)} asks", f"  {safe_text(request.question)}"]
    for number, option in enumerate(request.options, 1):
        lines.append(f"  {number}. {safe_text(option)}")
    if request.options:
        pick = "numbers, comma-separated" if request.multiple else "a number"
        lines.append(f"Answer ({pick}, or your own words; empty line to dismiss): ")
    else:
        lines.append("Answer (empty line to dismiss): ")
    return "\n".join(lines)


def parse_reply(request: QuestionRequest, line: str) -> QuestionAnswer:
    """Numbers pick options (all of them must be valid numbers); anything else is text."""
    reply = line.strip()
    if not reply:
        raise QuestionCancelled("dismissed at the terminal")
    parts = [p.strip() for p in reply.split(",")] if request.multiple else [reply]
    if request.options and all(p.isdigit() and 1 <= int(p) <= len(request.options) for p in parts):
        return checked_answer(request, [request.options[int(p) - 1] for p in parts], None)
    return checked_answer(request, [], reply)


def render_request(request: PermissionRequest) -> str:
    subject = "(the whole permission)" if request.subject is None else safe_text(request.subject)
    lines = [
        "",
        "local-tools: permission needed",
        f"  tool:       {safe_text(request.tool)}",
        f"  permission: {safe_text(request.permission)}",
        f"  subject:    {subject}",
        f"  user:       {safe_text(request.user_id)}",
    ]
    if request.summary:
        # A summary may span lines (a deploy's plan, a multi-line command): each is
        # escaped, and marked as the summary's so none can pass for a field of its own.
        first, *rest = safe_block(request.summary).split("\n")
        lines.append(f"  summary:    {first}")
        lines += [f"            | {line}" for line in rest]
    if request.suggestion is not None:
        pattern = safe_text(request.suggestion)
        lines.append(
            f"Allow? [o]nce / [a]lways this exact command / [p]attern {pattern}"
            " from now on / [d]eny (default deny): "
        )
    else:
        lines.append("Allow? [o]nce / [a]lways / [d]eny (default deny): ")
    return "\n".join(lines)


def safe_text(text: str) -> str:
    """Escape control and format characters.

    The subject comes from the model: raw escape sequences, carriage returns or
    bidi overrides could make `rm -rf ~` look like `ls` in the prompt.
    """
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def safe_block(text: str) -> str:
    """`safe_text` for a multi-line draft: line breaks and tabs stay as they are."""
    return "\n".join(
        "\t".join(safe_text(part) for part in line.split("\t")) for line in text.split("\n")
    )


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed or not a real stream
        return False
