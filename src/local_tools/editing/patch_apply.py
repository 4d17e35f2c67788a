"""Applying V4A hunks (see ``patch``) to the text of one file.

Each hunk's context and removed lines must match the file at exactly one place at
or after its position: the end of the previous hunk, or the line its ``@@`` header
names. Matching tries three levels in order and stops at the first that finds
anything: exact, ignoring trailing whitespace, ignoring all leading and trailing
whitespace. One place: applied. None: NOT_FOUND showing the hunk's first lines and
the closest region of the file. Several: CONFLICT naming the lines — unless the hunk
has an ``@@`` header and exactly one of them lies inside the header's block (up to
the next line indented no deeper than the header line), which is the place named.

Line endings are handled here, so callers may pass the file's text as it is: lines
are compared without their ``\\r\\n`` / ``\\n``, unchanged lines keep their own ending,
added lines get the file's dominant one, and a file without a final newline still
has none afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from local_tools.core.errors import Conflict, NotFound

if TYPE_CHECKING:
    from local_tools.editing.patch import Hunk

__all__ = ["HunkMatch", "apply_hunks", "apply_hunks_with_report"]

_LEVELS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exact", lambda s: s),
    ("trailing_whitespace", str.rstrip),
    ("whitespace", str.strip),
)
_SHOW_LINES = 6  # lines of a hunk / of the file quoted in an error


@dataclass(frozen=True)
class HunkMatch:
    """Where one hunk was applied."""

    hunk: int  # 1-based number of the hunk in its Update File section
    line: int  # 1-based line of the original text where it matched (or was inserted)
    removed: int
    added: int
    strategy: str  # "exact", "trailing_whitespace", "whitespace" or "insert"


def apply_hunks(text: str, hunks: Sequence[Hunk], *, path: str = "file") -> str:
    """The text after applying `hunks` in order; NotFound / Conflict when one doesn't fit.

    `path` only labels error messages.
    """
    return apply_hunks_with_report(text, hunks, path=path)[0]


def apply_hunks_with_report(
    text: str, hunks: Sequence[Hunk], *, path: str = "file"
) -> tuple[str, list[HunkMatch]]:
    """Like ``apply_hunks``, also saying where and how each hunk matched."""
    return _Applier(text, path).run(hunks)


class _Applier:
    def __init__(self, text: str, path: str) -> None:
        self.path = path
        parts = text.split("\n")
        tail = parts.pop()  # text after the last newline: a last line without one
        self.lines: list[str] = []
        self.eols: list[str] = []
        for part in parts:
            if part.endswith("\r"):
                self.lines.append(part[:-1])
                self.eols.append("\r\n")
            else:
                self.lines.append(part)
                self.eols.append("\n")
        self.missing_final_eol = tail != ""
        if tail:
            self.lines.append(tail)
            self.eols.append("")
        crlf = self.eols.count("\r\n")
        self.newline = "\r\n" if crlf and crlf >= self.eols.count("\n") else "\n"
        self._normalized: dict[str, list[str]] = {}

    def norm(self, level: str, fn: Callable[[str], str]) -> list[str]:
        if level not in self._normalized:
            self._normalized[level] = [fn(line) for line in self.lines]
        return self._normalized[level]

    # ------------------------------------------------------------------ driver

    def run(self, hunks: Sequence[Hunk]) -> tuple[str, list[HunkMatch]]:
        edits: list[tuple[int, tuple[tuple[str, str], ...]]] = []
        report: list[HunkMatch] = []
        cursor = 0
        for number, hunk in enumerate(hunks, 1):
            start, after = cursor, "the previous hunk" if number > 1 else ""
            header_at: int | None = None
            for header in hunk.headers:
                found = self._find_header(header, start)
                if found is None:
                    raise self._header_not_found(number, hunk, header, start, after)
                header_at, after = found, f"the @@ header {header!r} at line {found + 1}"
                start = found + 1  # a further header is looked for below this one
            if header_at is not None:
                start = header_at  # the hunk may begin with the header line itself
            lines = hunk.lines
            old = [text for kind, text in lines if kind != "+"]
            added = sum(kind == "+" for kind, _ in lines)
            if not old:  # pure addition: below the header, else at the end of the file
                at = header_at + 1 if header_at is not None and not hunk.end_of_file else None
                at = len(self.lines) if at is None else at
                edits.append((at, lines))
                report.append(HunkMatch(number, at + 1, 0, added, "insert"))
                cursor = at
                continue
            places, level = self._find_block(old, start, hunk.end_of_file)
            while not places and lines[-1][0] == " " and not lines[-1][1].strip() and len(old) > 1:
                # Blank context lines at the end that the file doesn't have: drop them.
                lines, old = lines[:-1], old[:-1]
                places, level = self._find_block(old, start, hunk.end_of_file)
            if len(places) > 1 and header_at is not None:
                # Ties are broken by the header: keep the places inside its block.
                end = self._block_end(header_at)
                inside = [p for p in places if p + len(old) <= end]
                places = inside if len(inside) == 1 else places
            if len(places) > 1:
                raise self._conflict(number, hunk, places, start, after)
            if not places:
                raise self._not_found(number, hunk, start, after)
            at = places[0]
            edits.append((at, lines))
            removed = sum(kind == "-" for kind, _ in lines)
            report.append(HunkMatch(number, at + 1, removed, added, level))
            cursor = at + len(old)
        return self._splice(edits), report

    # ------------------------------------------------------------------ search

    def _find_header(self, header: str, start: int) -> int | None:
        for level, fn in _LEVELS:
            lines, want = self.norm(level, fn), fn(header)
            for i in range(start, len(lines)):
                if lines[i] == want:
                    return i
        stripped, want = self.norm("whitespace", str.strip), header.strip()
        for i in range(start, len(stripped)):  # a header may name just a line's start
            if stripped[i].startswith(want):
                return i
        return None

    def _block_end(self, header_at: int) -> int:
        """End (exclusive) of the block a header line opens: up to and including the
        next non-blank line indented no deeper than the header (the next def, a '}')."""
        header = self.lines[header_at]
        depth = len(header) - len(header.lstrip())
        for i in range(header_at + 1, len(self.lines)):
            line = self.lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= depth:
                return i + 1
        return len(self.lines)

    def _find_block(self, old: list[str], start: int, at_end: bool) -> tuple[list[int], str]:
        n, m = len(self.lines), len(old)
        if at_end:  # the block must end the file (blank lines after it are allowed)
            last = n
            candidates = []
            while last >= m:
                if last - m >= start:
                    candidates.append(last - m)
                if last == 0 or self.lines[last - 1].strip():
                    break
                last -= 1
        else:
            candidates = list(range(start, n - m + 1))
        for level, fn in _LEVELS:
            lines, want = self.norm(level, fn), [fn(x) for x in old]
            first = want[0]
            found = [i for i in candidates if lines[i] == first and lines[i : i + m] == want]
            if found:
                return found, level
        return [], ""

    # ------------------------------------------------------------------ result

    def _splice(self, edits: list[tuple[int, tuple[tuple[str, str], ...]]]) -> str:
        out: list[str] = []
        eols: list[str] = []
        cursor = 0
        for at, lines in edits:
            out.extend(self.lines[cursor:at])
            eols.extend(self.eols[cursor:at])
            i = at
            for kind, text in lines:
                if kind == " ":  # unchanged: keep the file's own text and ending
                    out.append(self.lines[i])
                    eols.append(self.eols[i])
                    i += 1
                elif kind == "-":
                    i += 1
                else:
                    out.append(text)
                    eols.append(self.newline)
            cursor = i
        out.extend(self.lines[cursor:])
        eols.extend(self.eols[cursor:])
        if not out:
            return ""
        eols = [e or self.newline for e in eols]
        if self.missing_final_eol:
            eols[-1] = ""
        return "".join(line + eol for line, eol in zip(out, eols, strict=True))

    # ------------------------------------------------------------------ errors

    def _where(self, hunk: Hunk, number: int) -> str:
        return f"Hunk {number} of {self.path} (patch line {hunk.line})"

    def _searched(self, start: int, after: str) -> str:
        if not after:
            return ""
        return f" (searched from line {start + 1}, after {after})"

    def _conflict(
        self, number: int, hunk: Hunk, places: list[int], start: int, after: str
    ) -> Conflict:
        shown = ", ".join(str(p + 1) for p in places[:10])
        more = f" and {len(places) - 10} more" if len(places) > 10 else ""
        return Conflict(
            f"{self._where(hunk, number)} matches {len(places)} places"
            f"{self._searched(start, after)}: lines {shown}{more}. Nothing was changed. Add more "
            "unchanged context lines around the change, or an '@@ <line>' header copied "
            "from a line above it (such as the enclosing def or class), so that it "
            "matches exactly one place.",
            details={
                "path": self.path,
                "hunk": number,
                "patch_line": hunk.line,
                "lines": [p + 1 for p in places],
            },
        )

    def _not_found(self, number: int, hunk: Hunk, start: int, after: str) -> NotFound:
        old = hunk.old
        quoted = "\n".join(f"  | {line}" for line in old[:_SHOW_LINES])
        if len(old) > _SHOW_LINES:
            quoted += f"\n  | … ({len(old) - _SHOW_LINES} more)"
        message = (
            f"{self._where(hunk, number)} does not match the file"
            f"{self._searched(start, after)}. Its context and removed lines begin:\n{quoted}\n"
        )
        details: dict[str, object] = {"path": self.path, "hunk": number, "patch_line": hunk.line}
        best = _closest(self.lines, old)
        if not self.lines:
            message += "The file is empty.\n"
        elif best is None:
            width = min(_SHOW_LINES, len(self.lines))
            region = "\n".join(f"  {i + 1:>5} | {self.lines[i]}" for i in range(width))
            message += f"Nothing in the file resembles these lines. The file begins:\n{region}\n"
        else:
            width = min(len(old), _SHOW_LINES, len(self.lines) - best)
            region = "\n".join(f"  {i + 1:>5} | {self.lines[i]}" for i in range(best, best + width))
            message += f"The closest region of the file is at line {best + 1}:\n{region}\n"
            if best < start:
                message += (
                    "That region is above where this hunk was searched: hunks must be in "
                    "file order, each below the previous hunk and its @@ header.\n"
                )
            details["closest_line"] = best + 1
        message += (
            "Nothing was changed. Copy the context (' ') and removed ('-') lines exactly "
            "from the current file (read it again with read_file), then retry."
        )
        return NotFound(message, details=details)

    def _header_not_found(
        self, number: int, hunk: Hunk, header: str, start: int, after: str
    ) -> NotFound:
        message = (
            f"{self._where(hunk, number)}: its @@ header {header!r} is not a line of the "
            f"file{self._searched(start, after) or f' at or after line {start + 1}'}. "
        )
        best = _closest(self.lines, [header])
        if best is not None:
            message += f"The closest line is {best + 1}: {self.lines[best].strip()!r}. "
        message += (
            "Nothing was changed. A header must copy a line above the change (such as "
            "'def name(...):' or 'class Name:'); or use a bare '@@'."
        )
        return NotFound(
            message, details={"path": self.path, "hunk": number, "patch_line": hunk.line}
        )


def _closest(lines: list[str], old: list[str]) -> int | None:
    """Start of the file region that looks most like `old` (for error messages)."""
    if not lines:
        return None
    target = [x.strip() for x in old[:30]]
    stripped = [x.strip() for x in lines]
    n, width = len(lines), min(len(target), len(lines))
    positions: dict[str, list[int]] = {}
    for j, s in enumerate(stripped):
        if s:
            positions.setdefault(s, []).append(j)
    votes: Counter[int] = Counter()
    for k, t in enumerate(target):
        for j in positions.get(t, ())[:1000] if t else ():
            votes[min(max(j - k, 0), n - width)] += 1
    candidates = [p for p, _ in votes.most_common(50)]
    if not candidates:
        k, t = next(((k, t) for k, t in enumerate(target) if t), (0, ""))
        if not t:
            return None
        matcher = SequenceMatcher(autojunk=False)
        matcher.set_seq2(t)
        scored = []
        for j, s in enumerate(stripped):
            matcher.set_seq1(s)
            if matcher.real_quick_ratio() >= 0.5 and matcher.quick_ratio() >= 0.5:
                ratio = matcher.ratio()
                if ratio >= 0.5:
                    scored.append((ratio, j))
        scored.sort(reverse=True)
        candidates = [min(max(j - k, 0), n - width) for _, j in scored[:50]]
    if not candidates:
        return None
    joined = "\n".join(target)

    def score(p: int) -> tuple[float, int]:
        window = "\n".join(stripped[p : p + width])
        return SequenceMatcher(None, window, joined, autojunk=False).ratio(), -p

    return max(candidates, key=score)
