"""The review dialog at a terminal: pass, edit in $VISUAL/$EDITOR, or feedback.

Edit works as git's commit message does: the draft is written to a temp file, the
person's editor opens it on the terminal, and what they save is the answer. Which
editor: $VISUAL, then $EDITOR, run through the shell so `code --wait` or
`emacsclient -t` work. With neither set, edit is not offered a vi nobody chose: the
dialog says how to set one and asks again. An editor that fails or saves nothing new
sends the person back to the choice; an empty line or EOF dismisses the review.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import TextIO

from local_tools.interact.base import (
    QuestionCancelled,
    ReviewAnswer,
    ReviewRequest,
    checked_review,
)
from local_tools.interact.terminal import safe_block, safe_text

__all__ = ["EditorFailed", "editor_command", "review_dialog", "run_editor"]

PREVIEW_LINES = 60  # the rest is a keystroke away, in the editor


class EditorFailed(Exception):
    """The editor could not start, failed, or saved something unreadable."""


def editor_command() -> str | None:
    """$VISUAL, else $EDITOR, else None (no fallback the person did not choose)."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def run_editor(editor: str, text: str, suffix: str = ".md") -> str:
    """Open `text` in `editor` on a private temp copy and return what was saved."""
    with tempfile.TemporaryDirectory(prefix="local-tools-review-") as folder:
        path = Path(folder) / f"review{suffix}"
        path.write_bytes(text.encode("utf-8"))  # bytes: line endings stay as they are
        if os.name == "nt":
            argv = [*shlex.split(editor, posix=False), str(path)]
        else:  # as git does: the shell splits and expands the editor's own arguments
            argv = ["/bin/sh", "-c", f'{editor} "$@"', editor, str(path)]
        try:
            status = subprocess.run(argv, check=False).returncode
        except OSError as exc:
            raise EditorFailed(f"could not start the editor {editor!r}: {exc}") from None
        if status != 0:
            raise EditorFailed(
                f"the editor {editor!r} exited with status {status}: the edit was discarded"
            )
        try:
            edited = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EditorFailed(f"the edited text could not be read back: {exc}") from None
    if not text.endswith("\n") and edited == text + "\n":
        return text  # most editors add a final newline: that is not an edit
    return edited


def review_dialog(stdin: TextIO, stderr: TextIO, request: ReviewRequest) -> ReviewAnswer:
    """Run the dialog on a terminal (the caller holds the terminal's lock)."""
    suffix = PurePosixPath(request.path).suffix if request.path else ".md"
    _say(stderr, _render(request))
    while True:
        editor = editor_command()
        edit = "[e]dit in " + (shlex.quote(editor) if editor else "your editor ($EDITOR unset)")
        choices = ["[p]ass", edit] + (["[f]eedback"] if request.feedback else [])
        reply = _read(stdin, stderr, f"Review: {' / '.join(choices)} (empty line to dismiss): ")
        choice = reply.strip().lower()
        if not choice:
            raise QuestionCancelled("dismissed at the terminal")
        if choice in ("p", "pass"):
            return checked_review(request, "pass")
        if choice in ("e", "edit"):
            if editor is None:
                _say(stderr, "No editor is set: set $VISUAL or $EDITOR (for example "
                     "`export EDITOR=nano`) to edit here, or choose another answer.\n")  # fmt: skip
                continue
            try:
                edited = run_editor(editor, request.content, suffix or ".txt")
            except EditorFailed as exc:
                _say(stderr, f"{exc}.\n")
                continue
            if edited == request.content:
                _say(stderr, "No changes were saved.\n")
                continue
            return checked_review(request, "edit", edited)
        if choice in ("f", "feedback") and request.feedback:
            words = _read_block(stdin, stderr, "Your feedback (end with an empty line):\n")
            if not words.strip():
                _say(stderr, "No feedback was written.\n")
                continue
            return checked_review(request, "feedback", feedback=words)
        _say(stderr, f"Not an answer: {safe_text(reply.strip())!r}.\n")


def _render(request: ReviewRequest) -> str:
    lines = ["", f"local-tools: {safe_text(request.tool)} asks for your review"]
    title = safe_text(request.title)
    if request.path and request.path != request.title:
        title += f" ({safe_text(request.path)})"
    lines.append(f"  {title}")
    if request.prompt:
        lines += [f"  {line}" for line in safe_block(request.prompt).split("\n")]
    body = safe_block(request.content).split("\n")
    lines.append(f"  ---- {len(body)} line{'s' if len(body) != 1 else ''} ----")
    lines += [f"  | {line}" for line in body[:PREVIEW_LINES]]
    if len(body) > PREVIEW_LINES:
        lines.append(f"  ... {len(body) - PREVIEW_LINES} more lines: choose edit to see them all")
    return "\n".join(lines) + "\n"


def _say(stderr: TextIO, text: str) -> None:
    try:
        stderr.write(text)
        stderr.flush()
    except (OSError, ValueError):
        pass


def _read(stdin: TextIO, stderr: TextIO, prompt: str) -> str:
    _say(stderr, prompt)
    try:
        line = stdin.readline()
    except (OSError, ValueError):  # closed stream or terminal gone: no answer
        line = ""
    if not line.endswith("\n"):
        _say(stderr, "\n")
    return line


def _read_block(stdin: TextIO, stderr: TextIO, prompt: str) -> str:
    _say(stderr, prompt)
    lines: list[str] = []
    while True:
        try:
            line = stdin.readline()
        except (OSError, ValueError):
            line = ""
        if not line.strip():
            return "\n".join(lines)
        lines.append(line.rstrip("\r\n"))
