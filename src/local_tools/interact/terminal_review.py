"""The review dialog at a terminal: pass, edit in $VISUAL/$EDITOR, or feedback.

Edit works as git's commit message does: the draft is written to a temp file, the
person's editor opens it on the terminal, and what they save is the answer. Which
editor: $VISUAL, then $EDITOR, run through the shell so `code --wait` or
`emacsclient -t` work. With neither set, edit is not offered a vi nobody chose: the
dialog says how to set one and asks again. An editor that fails or saves nothing new
sends the person back to the choice; an empty line or EOF dismisses the review. The
dialog reads no longer than the review's deadline: then it says so and ends (a
TimeoutError), letting go of the terminal.
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
from local_tools.interact.terminal import read_line, safe_block, safe_text

__all__ = ["EditorFailed", "editor_command", "editor_suffix", "review_dialog", "run_editor"]

PREVIEW_LINES = 60  # the rest is a keystroke away, in the editor
MAX_SUFFIX = 16  # a longer extension is not kept on the temp copy (NAME_MAX is 255)


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
    try:
        with tempfile.TemporaryDirectory(prefix="local-tools-review-") as folder:
            return _edit_copy(editor, text, Path(folder) / f"review{suffix}")
    except OSError as exc:  # no room for the temp copy, a name the system refuses
        raise EditorFailed(f"could not prepare the text for the editor: {exc}") from None


def _edit_copy(editor: str, text: str, path: Path) -> str:
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


def editor_suffix(path: str | None) -> str:
    """The temp copy's extension, for the editor's syntax mode: the file's own when it
    is short and printable, else ".txt" (".md" for a draft that is not a file)."""
    if path is None:
        return ".md"
    suffix = PurePosixPath(path).suffix
    if 1 < len(suffix) <= MAX_SUFFIX and suffix.isprintable():
        return suffix
    return ".txt"


def review_dialog(
    stdin: TextIO, stderr: TextIO, request: ReviewRequest, deadline: float | None = None
) -> ReviewAnswer:
    """Run the dialog on a terminal (the caller holds the terminal's lock). Reads wait
    until `deadline` (time.monotonic()) at most: TimeoutError then."""
    try:
        return _dialog(stdin, stderr, request, deadline)
    except TimeoutError:
        _say(stderr, "\nThe review timed out: nothing was passed or changed.\n")
        raise


def _dialog(
    stdin: TextIO, stderr: TextIO, request: ReviewRequest, deadline: float | None
) -> ReviewAnswer:
    suffix = editor_suffix(request.path)
    _say(stderr, _render(request))
    while True:
        editor = editor_command()
        edit = "[e]dit in " + (shlex.quote(editor) if editor else "your editor ($EDITOR unset)")
        choices = ["[p]ass", edit] + (["[f]eedback"] if request.feedback else [])
        prompt = f"Review: {' / '.join(choices)} (empty line to dismiss): "
        reply = _read(stdin, stderr, prompt, deadline)
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
                edited = run_editor(editor, request.content, suffix)
            except EditorFailed as exc:
                _say(stderr, f"{exc}.\n")
                continue
            if edited == request.content:
                _say(stderr, "No changes were saved.\n")
                continue
            return checked_review(request, "edit", edited)
        if choice in ("f", "feedback") and request.feedback:
            ask = "Your feedback (end with an empty line):\n"
            words = _read_block(stdin, stderr, ask, deadline)
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


def _read(stdin: TextIO, stderr: TextIO, prompt: str, deadline: float | None) -> str:
    _say(stderr, prompt)
    try:
        line = read_line(stdin, deadline)
    except TimeoutError:
        raise
    except (OSError, ValueError):  # closed stream or terminal gone: no answer
        line = ""
    if not line.endswith("\n"):
        _say(stderr, "\n")
    return line


def _read_block(stdin: TextIO, stderr: TextIO, prompt: str, deadline: float | None) -> str:
    _say(stderr, prompt)
    lines: list[str] = []
    while True:
        try:
            line = read_line(stdin, deadline)
        except TimeoutError:
            raise
        except (OSError, ValueError):
            line = ""
        if not line.strip():
            return "\n".join(lines)
        lines.append(line.rstrip("\r\n"))
