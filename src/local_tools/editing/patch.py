"""The V4A patch format (OpenAI's ``apply_patch``): parsing into plain dataclasses.

    *** Begin Patch
    *** Add File: path/new.py
    +line
    *** Update File: path/old.py
    *** Move to: path/renamed.py          (optional, right after Update File)
    @@ def some_function():                (optional header(s), or a bare @@)
     context line
    -removed line
    +added line
    *** End of File                        (optional: the hunk ends at the end of the file)
    *** Delete File: path/gone.py
    *** End Patch

Lenient where models are sloppy in harmless ways: a missing ``*** End Patch``, a
``\u0060\u0060\u0060`` fence or a heredoc (``apply_patch <<'EOF'`` … ``EOF``) around the
patch, CRLF line ends, whitespace around markers, unified-diff ``@@ -1,3 +1,4 @@``
headers (the numbers are ignored), blank lines between sections, a first hunk without
``@@``, an empty line inside a hunk (read as an empty context line). Strict
everywhere else: any other line is an error naming its line number and what was
expected. Applying hunks to text is in ``patch_apply``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from local_tools.core.errors import InvalidInput
from local_tools.editing.patch_apply import HunkMatch, apply_hunks, apply_hunks_with_report

__all__ = [
    "AddFile",
    "DeleteFile",
    "FileOp",
    "Hunk",
    "HunkMatch",
    "Patch",
    "UpdateFile",
    "apply_hunks",
    "apply_hunks_with_report",
    "parse_patch",
]


@dataclass(frozen=True)
class Hunk:
    """One change inside an Update File section.

    headers: the ``@@ <text>`` lines before it, in order (a bare ``@@`` adds none);
    each is looked for in turn, and the hunk is searched from the last one on.
    lines: (kind, text) with kind " " (context), "-" (removed) or "+" (added).
    """

    headers: tuple[str, ...]
    lines: tuple[tuple[str, str], ...]
    end_of_file: bool = False
    line: int = 0  # 1-based line of the patch where the hunk starts

    @property
    def old(self) -> list[str]:
        """What the file must contain here: context and removed lines."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new(self) -> list[str]:
        """What it becomes: context and added lines."""
        return [text for kind, text in self.lines if kind != "-"]


@dataclass(frozen=True)
class AddFile:
    path: str
    content: str  # every line ends with "\n"; "" for an empty file
    line: int = 0


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line: int = 0


@dataclass(frozen=True)
class UpdateFile:
    path: str
    hunks: tuple[Hunk, ...]
    move_to: str | None = None
    line: int = 0


FileOp = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    ops: tuple[FileOp, ...]


# ----------------------------------------------------------------------------- markers

_BEGIN = re.compile(r"\*\*\*\s*begin\s+patch", re.IGNORECASE)
_END = re.compile(r"\*\*\*\s*end\s+patch", re.IGNORECASE)
_FILE = re.compile(r"\*\*\*\s*(add|update|delete)\s+file\s*:\s*(.*?)", re.IGNORECASE)
_MOVE = re.compile(r"\*\*\*\s*move\s+to\s*:\s*(.*?)", re.IGNORECASE)
_EOF = re.compile(r"\*\*\*\s*end\s+of\s+file", re.IGNORECASE)
_UNIFIED_HEADER = re.compile(r"@@\s*-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@(.*)")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*(?:\|.*)?$")
_FENCE = re.compile(r"(`{3,}|~{3,})[\w+-]*")

_SYNTAX = (
    "A patch looks like:\n"
    "*** Begin Patch\n"
    "*** Update File: path/to/file.py\n"
    "@@ def some_function():\n"
    " unchanged line\n"
    "-removed line\n"
    "+added line\n"
    "*** End Patch"
)


def _shown(line: str, limit: int = 80) -> str:
    return repr(line if len(line) <= limit else line[:limit] + "…")


def _fail(lineno: int, message: str) -> InvalidInput:
    return InvalidInput(f"Invalid patch, line {lineno}: {message}", details={"line": lineno})


# ----------------------------------------------------------------------------- parser


def parse_patch(text: str) -> Patch:
    """Parse V4A patch text; raises InvalidInput naming the line and what was expected."""
    lines = text.replace("\r\n", "\n").split("\n")
    first, last = _unwrap(lines)
    if first > last:
        raise InvalidInput(f"The patch is empty. {_SYNTAX}")
    if not _BEGIN.fullmatch(lines[first].strip()):
        raise _fail(
            first + 1,
            f"expected '*** Begin Patch' as the first line, got {_shown(lines[first])}. " + _SYNTAX,
        )
    end = last if last > first and _END.fullmatch(lines[last].strip()) else last + 1
    parser = _Parser(lines, first + 1, end)
    ops = parser.parse()
    if not ops:
        raise _fail(
            first + 1,
            "the patch has no file sections. Add '*** Add File: <path>', "
            "'*** Update File: <path>' or '*** Delete File: <path>' sections.",
        )
    return Patch(tuple(ops))


def _unwrap(lines: list[str]) -> tuple[int, int]:
    """First and last line index of the patch proper: blank lines, ``` fences and a
    heredoc (``<<'EOF'`` … ``EOF``) around it are skipped."""
    first, last = 0, len(lines) - 1
    changed = True
    while changed:
        changed = False
        while first <= last and not lines[first].strip():
            first += 1
        while last >= first and not lines[last].strip():
            last -= 1
        if first > last:
            break
        head = lines[first].strip()
        if _FENCE.fullmatch(head):
            first += 1
            changed = True
            if last >= first and _FENCE.fullmatch(lines[last].strip()):
                last -= 1
            continue
        heredoc = None if head.startswith("***") else _HEREDOC.search(head)
        if heredoc:
            first += 1
            changed = True
            if last >= first and lines[last].strip() == heredoc.group(2):
                last -= 1
    return first, last


class _Parser:
    def __init__(self, lines: list[str], start: int, end: int) -> None:
        self.lines = lines
        self.pos = start
        self.end = end  # exclusive; "*** End Patch" (if any) is at `end`

    def parse(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while self.pos < self.end:
            line = self.lines[self.pos]
            stripped = line.strip()
            if not stripped:
                self.pos += 1
                continue
            if _END.fullmatch(stripped):
                self._expect_nothing_after()
                break
            match = _FILE.fullmatch(stripped)
            if match is None:
                raise _fail(self.pos + 1, self._top_level_hint(line))
            kind, path = match.group(1).lower(), match.group(2)
            lineno = self.pos + 1
            if not path:
                raise _fail(lineno, f"'*** {kind.title()} File:' needs a path after the colon.")
            self.pos += 1
            if kind == "add":
                ops.append(AddFile(path, self._add_lines(), lineno))
            elif kind == "delete":
                ops.append(DeleteFile(path, lineno))
            else:
                ops.append(self._update(path, lineno))
        return ops

    def _expect_nothing_after(self) -> None:
        for i in range(self.pos + 1, self.end):
            if self.lines[i].strip():
                raise _fail(
                    i + 1,
                    f"unexpected text after '*** End Patch': {_shown(self.lines[i])}. "
                    "Send one patch per call, or put every section before '*** End Patch'.",
                )

    def _top_level_hint(self, line: str) -> str:
        got = _shown(line)
        if line.startswith(("@@", "+", "-", " ")):
            return (
                f"{got} is a hunk line outside an '*** Update File: <path>' section. "
                "Hunks must follow an Update File header; new files use '*** Add File:' "
                "with every line starting with '+'."
            )
        if _MOVE.fullmatch(line.strip()):
            return "'*** Move to:' must come right after its '*** Update File:' line."
        return (
            f"expected '*** Add File: <path>', '*** Update File: <path>', "
            f"'*** Delete File: <path>' or '*** End Patch', got {got}."
        )

    def _add_lines(self) -> str:
        content: list[str] = []
        blanks = 0  # empty lines seen: content if more '+' lines follow, else spacing
        while self.pos < self.end:
            line = self.lines[self.pos]
            if line.startswith("+"):
                content.extend([""] * blanks)
                blanks = 0
                content.append(line[1:])
            elif not line.strip():
                blanks += 1
            elif line.lstrip().startswith("***"):
                break
            else:
                raise _fail(
                    self.pos + 1,
                    f"every line of an added file must start with '+', got {_shown(line)}. "
                    "Write '+' before each line of the new file (an empty line is '+').",
                )
            self.pos += 1
        return "".join(text + "\n" for text in content)

    def _update(self, path: str, lineno: int) -> UpdateFile:
        move_to: str | None = None
        if self.pos < self.end:
            move = _MOVE.fullmatch(self.lines[self.pos].strip())
            if move:
                move_to = move.group(1)
                if not move_to:
                    raise _fail(self.pos + 1, "'*** Move to:' needs a path after the colon.")
                self.pos += 1
        hunks = self._hunks(path)
        if move_to == path:
            move_to = None
        if not hunks and move_to is None:
            raise _fail(
                lineno,
                f"'*** Update File: {path}' has no hunks. Add the changes as lines starting "
                "with ' ', '-' or '+' (after an optional '@@' header), or remove the section.",
            )
        return UpdateFile(path, tuple(hunks), move_to, lineno)

    def _hunks(self, path: str) -> list[Hunk]:
        hunks: list[Hunk] = []
        headers: list[str] = []
        body: list[tuple[str, str]] = []
        start = 0  # patch line of the current hunk; 0 = none open

        def finish(eof: bool = False) -> None:
            nonlocal headers, body, start
            # Empty lines right before the next section are spacing, not context.
            while body and body[-1] == (" ", "") and raw_blank_tail[0] > 0:
                body.pop()
                raw_blank_tail[0] -= 1
            if not body:
                raise _fail(
                    start,
                    f"a hunk of '{path}' has no lines. After '@@' put the unchanged "
                    "context lines (starting with ' '), removed lines ('-') and added "
                    "lines ('+').",
                )
            hunks.append(Hunk(tuple(headers), tuple(body), eof, start))
            headers, body, start = [], [], 0
            raw_blank_tail[0] = 0

        raw_blank_tail = [0]  # trailing body lines that were completely empty in the patch
        while self.pos < self.end:
            line = self.lines[self.pos]
            lineno = self.pos + 1
            if line.startswith("***"):
                marker = line.rstrip()
                if _EOF.fullmatch(marker):
                    if not start:
                        raise _fail(lineno, "'*** End of File' must follow a hunk's lines.")
                    finish(eof=True)
                    self.pos += 1
                    self._after_end_of_file(path)
                    continue
                if _MOVE.fullmatch(marker):
                    raise _fail(lineno, "'*** Move to:' must come right after '*** Update File:'.")
                break  # the next section, or the end of the patch
            if not line.strip() and not start:
                pass  # spacing before a hunk
            elif line.startswith("@@"):
                while body and body[-1] == (" ", "") and raw_blank_tail[0] > 0:
                    body.pop()  # spacing between two hunks
                    raw_blank_tail[0] -= 1
                if body:
                    finish()
                if not start:
                    start = lineno
                header = _header_text(line)
                if header:
                    headers.append(header)
            elif line[:1] in (" ", "-", "+") or not line.strip():
                if not start:
                    start = lineno
                if line[:1] in ("-", "+"):
                    body.append((line[0], line[1:]))
                elif line.startswith(" "):
                    body.append((" ", line[1:]))
                else:  # an empty (or whitespace-only) line: a blank context line
                    body.append((" ", line))
                raw_blank_tail[0] = raw_blank_tail[0] + 1 if not line else 0
            else:
                raise _fail(
                    lineno,
                    f"unexpected line in '{path}': {_shown(line)}. Every hunk line starts "
                    "with ' ' (unchanged context), '-' (removed) or '+' (added); a new hunk "
                    "starts with '@@', a new file section with '*** '.",
                )
            self.pos += 1
        if start:
            finish()
        return hunks

    def _after_end_of_file(self, path: str) -> None:
        """After '*** End of File' only a new '@@' hunk, a section or the end may come."""
        while self.pos < self.end and not self.lines[self.pos].strip():
            self.pos += 1
        if self.pos < self.end:
            line = self.lines[self.pos]
            if line.startswith(("+", "-", " ")):
                raise _fail(
                    self.pos + 1,
                    f"{_shown(line)} follows '*** End of File' in '{path}'; nothing comes "
                    "after the end of a file. Start a new hunk with '@@' if it belongs "
                    "elsewhere.",
                )


def _header_text(line: str) -> str:
    """The text of an '@@' line: '' for a bare '@@'; unified-diff numbers are ignored."""
    unified = _UNIFIED_HEADER.fullmatch(line.rstrip())
    if unified:
        return unified.group(1).strip()
    return line[2:].strip()
