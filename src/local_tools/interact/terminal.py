"""Ask for permission on the terminal: `[o]nce / [a]lways / [d]eny`.

The prompt goes to stderr so stdout stays clean for the JSON a CLI call prints.
The blocking read runs in a thread so the event loop keeps serving other work.
Anything but a clear yes — EOF, an empty line, a typo — is a deny.
"""

from __future__ import annotations

import asyncio
import sys
import threading
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
        return await asyncio.to_thread(self._review_blocking, request)

    def _review_blocking(self, request: ReviewRequest) -> ReviewAnswer:
        from local_tools.interact.terminal_review import review_dialog  # only when reviewing

        with self._lock:
            return review_dialog(self._input or sys.stdin, self._output or sys.stderr, request)

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
                line = stdin.readline()
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
                line = stdin.readline()
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
