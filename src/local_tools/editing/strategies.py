"""Tolerant, line-based matching: where in a file are old_string's lines?

Used only after an exact search found nothing. A tolerant match is a *window*: a
contiguous run of exactly as many file lines as the query has, each one equal to
the query's line after the level's normalisation (blank lines only match blank
lines). There is no similarity threshold, no anchor-only or first/last-line
matching and no skipping of lines, so a window is always the block the model
copied, give or take invisible slips.

Levels, each tolerating everything the previous one does:

1. LINE_ENDINGS: lines equal once their '\r\n'/'\n' terminators are ignored; the
   first line may be the tail of a file line and the last line the head of one,
   just as an exact substring could be. A final line break that old_string has
   and the file's last line lacks also counts as a line-ending slip.
2. TRAILING_WHITESPACE: whole lines equal after rstrip().
3. INDENTATION: whole lines equal after strip(), and the indentation of every
   non-blank line differs from the file's in one consistent way: a fixed
   whitespace string added or removed, or (tabs and spaces mixed up) one tab width
   under which every line's indentation width is off by the same amount. The
   window carries the function that re-indents new_string the same way.

Windows are found without a Python loop over every line: the query's most
distinctive line is searched with str.find and only the windows around its few
occurrences are verified; when every query line is common, one regex (run in C)
yields just the candidate windows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from local_tools.editing.indent import Reindent, indent_map, is_blank, leading_ws

__all__ = [
    "INDENTATION",
    "LEVEL_NAMES",
    "LINE_ENDINGS",
    "TRAILING_WHITESPACE",
    "Found",
    "Query",
    "Window",
    "find_windows",
    "has_escapes",
    "is_blank",
    "join_lines",
    "make_query",
    "split_lines",
    "strip_blank_lines",
    "unescape",
]

LINE_ENDINGS = 1
TRAILING_WHITESPACE = 2
INDENTATION = 3
LEVEL_NAMES = {
    LINE_ENDINGS: "line_endings",
    TRAILING_WHITESPACE: "trailing_whitespace",
    INDENTATION: "indentation",
}

# Past this many occurrences an anchor line is too common; try a rarer one.
_ANCHOR_LIMIT = 64
_ANCHOR_CHOICES = 3
_SPACE = r"[^\S\n]*"  # whitespace within a line ('\r' included)
_ANY = r"[^\n]*"
# What a blank line's pattern may be, narrowest first: each accepts what those before do.
_BREADTH = ("", r"\r?", _SPACE, _ANY)


@dataclass(frozen=True)
class Query:
    """old_string as lines, plus how its ends may meet the file's lines."""

    lines: tuple[str, ...]  # without terminators
    trail: bool  # ended with a line break: the window includes the last terminator
    open_start: bool  # first line may be the tail of a file line (LINE_ENDINGS only)
    open_end: bool  # last line may be the head of a file line (LINE_ENDINGS only)


@dataclass(frozen=True)
class Window:
    line: int  # 0-based index of the first file line of the match
    count: int  # number of file lines it spans
    start: int  # offsets of the replaced text in the content
    end: int
    level: int
    reindent: Reindent | None  # INDENTATION only: maps a new_string line to file style
    drop_eol: bool = False  # old_string's final line break is missing at end of file


def split_lines(text: str) -> tuple[list[str], bool]:
    """`text` as lines without terminators, and whether it ended with a line break.

    Only '\\n' and '\\r\\n' end lines (str.splitlines would also split on form feeds
    and Unicode separators, which are ordinary characters in source files).
    """
    parts = text.split("\n")
    trail = len(parts) > 1 and parts[-1] == ""
    if trail:
        parts.pop()
    last = len(parts) - 1
    # A '\r' is a terminator only where a '\n' follows it.
    return [
        p[:-1] if p.endswith("\r") and (i < last or trail) else p for i, p in enumerate(parts)
    ], trail


def join_lines(lines: Sequence[str], trail: bool, eol: str) -> str:
    text = eol.join(lines)
    return text + eol if trail and lines else text


def make_query(text: str) -> Query:
    lines, trail = split_lines(text)
    return Query(tuple(lines), trail, open_start=True, open_end=not trail)


def strip_blank_lines(old: str, new: str) -> tuple[Query, str] | None:
    """Drop old_string's leading/trailing blank lines (and as many of new_string's).

    None when old_string has no such lines, or nothing else. new_string loses at
    most as many blank lines as old_string did at each end, so "replace the blank
    line and X by the blank line and Y" stays "replace X by Y".
    """
    lines, trail = split_lines(old)
    lead = _count_blank(lines)
    if lead == len(lines):
        return None
    tail = _count_blank(reversed(lines))
    if not lead and not tail:
        return None
    body = lines[lead : len(lines) - tail]
    nlines, ntrail = split_lines(new)
    n_lead = min(lead, _count_blank(nlines))
    n_tail = min(tail, _count_blank(reversed(nlines[n_lead:])))
    kept = nlines[n_lead : len(nlines) - n_tail]
    new_trail = ntrail or n_tail > 0
    # Dropped trailing blank lines mean the body's last line ended with a break. But
    # if new_string ends without one, replacing that break would join the next line
    # onto new_string: a reading of phantom lines that destroys; leave it in place.
    body_trail = (trail or tail > 0) and (new_trail or not tail)
    query = Query(tuple(body), body_trail, open_start=not lead, open_end=False)
    return query, join_lines(kept, new_trail, "\n")


def _count_blank(lines: Iterable[str]) -> int:
    count = 0
    for line in lines:
        if not is_blank(line):
            break
        count += 1
    return count


# Escapes a model writes when it double-escapes its JSON: \n \t \r \" \' \` \$ \\.
_ESCAPE = re.compile(r"\\([ntr\"'`$\\])")
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "`": "`", "$": "$", "\\": "\\"}


def has_escapes(text: str) -> bool:
    return _ESCAPE.search(text) is not None


def unescape(text: str) -> str:
    # A function replacement: the text is data, never a re template.
    return _ESCAPE.sub(lambda m: _UNESCAPED[m.group(1)], text)


@dataclass(frozen=True)
class Found:
    windows: list[Window]  # in file order
    # Lowest level at which the search stopped counting because two windows already
    # made it ambiguous; the count of windows at that level is then a lower bound.
    cut: int | None = None


def find_windows(content: str, query: Query, *, exhaustive: bool = True) -> Found:
    """The windows of `content` that match `query` at some level, in file order.

    With exhaustive=False (a single replacement is wanted) the search stops looking
    for windows at a level once two were found there: that level is ambiguous
    whatever else exists, so only lower levels can still decide.
    """
    stripped = [line.strip() for line in query.lines]
    anchor = _pick_anchor(content, stripped)
    if anchor is None:
        return Found([])
    search = _Search(content, query, exhaustive)
    if anchor[1] <= _ANCHOR_LIMIT:
        search.around_anchor(anchor[0], stripped.index(anchor[0]))
    else:
        search.by_pattern()
    return Found(search.windows, search.cut)


class _Search:
    """Candidate windows → verified windows, tracking the level still worth checking."""

    def __init__(self, content: str, query: Query, exhaustive: bool) -> None:
        self.content = content
        self.query = query
        self.exhaustive = exhaustive
        self.windows: list[Window] = []
        self.per_level = dict.fromkeys(LEVEL_NAMES, 0)
        self.top = INDENTATION  # highest level that can still change the outcome
        self.cut: int | None = None

    def _consider(self, first: int, pos: int, offset: int) -> None:
        window = _verify(self.content, self.query, first, pos, offset, self.top)
        if window is None:
            return
        self.windows.append(window)
        self.per_level[window.level] += 1
        if not self.exhaustive and self.per_level[window.level] >= 2:
            self.cut = window.level
            self.top = window.level - 1

    def around_anchor(self, anchor: str, offset: int) -> None:
        """Verify the window around each line holding `anchor` (a rare query line)."""
        content = self.content
        line_no = 0
        counted = 0
        pos = content.find(anchor)
        while pos != -1 and self.top:
            line_no += content.count("\n", counted, pos)
            counted = pos
            self._consider(line_no - offset, pos, offset)
            # Further hits on this line would give the same window.
            newline = content.find("\n", pos)
            if newline == -1:
                return
            pos = content.find(anchor, newline + 1)

    def by_pattern(self) -> None:
        """Every query line is common: let one C-speed regex find the candidate windows.

        Only windows that can match at a level up to `top` reach Python, not every
        "}" of the file. Searches restart on the next line, so overlapping windows
        are all seen; the regex tightens when `top` drops.
        """
        content = self.content
        top = self.top
        pattern = _pattern(self.query, top)
        line_no = 0
        counted = 0
        pos = 0
        while self.top and (found := pattern.search(content, pos)) is not None:
            start = found.start()
            line_no += content.count("\n", counted, start)
            counted = start
            self._consider(line_no, start, 0)
            if self.top != top and self.top:
                top = self.top
                pattern = _pattern(self.query, top)
            pos = content.find("\n", start) + 1
            if not pos:
                return


def _pattern(query: Query, top: int) -> re.Pattern[str]:
    """A regex matching (at least) every window that matches `query` at a level <= top."""
    last = len(query.lines) - 1
    parts = []
    for i, line in enumerate(query.lines):
        if top >= INDENTATION:
            core, lead, end = line.strip(), _SPACE, _SPACE
        elif top == TRAILING_WHITESPACE:
            core, lead, end = line.rstrip(), "", _SPACE
        else:
            core, lead, end = line, "", r"\r?"
        # Fragments may have anything before/after them on their line (LINE_ENDINGS).
        if i == 0 and query.open_start:
            lead = _ANY
        if i == last and query.open_end:
            end = _ANY
        if not core:
            # A blank line: one quantifier, not `lead` and `end` back to back. Two
            # adjacent ones can split a run of spaces in n ways, and a failure further
            # on retries every split of every blank line: exponential backtracking.
            lead, end = "", max(lead, end, key=_BREADTH.index)
        if i == 0 and core:
            # Start with the literal, not "^": the regex engine then skips ahead to
            # its occurrences at C speed. _verify checks the rest of that line.
            lead = ""
        elif i == 0:
            lead = "^" + lead
        parts.append(lead + re.escape(core) + end)
    return re.compile(r"\n".join(parts) + "$", re.MULTILINE)


def _pick_anchor(content: str, stripped: list[str]) -> tuple[str, int] | None:
    """The query line to search for and (roughly) how often it occurs: long, and rare."""
    choices = sorted({s for s in stripped if s}, key=len, reverse=True)[:_ANCHOR_CHOICES]
    if not choices:
        return None
    counts: list[tuple[int, str]] = []
    for choice in choices:
        seen, pos = 0, content.find(choice)
        while pos != -1 and seen <= _ANCHOR_LIMIT:
            seen += 1
            pos = content.find(choice, pos + 1)
        if seen <= _ANCHOR_LIMIT:
            return choice, seen
        counts.append((content.count(choice), choice))
    count, choice = min(counts)
    return choice, count


def _verify(
    content: str, query: Query, first: int, pos: int, offset: int, top: int
) -> Window | None:
    """The window at line `first` (its line `offset` holds `pos`), if it matches by `top`."""
    if first < 0:
        return None
    start = content.rfind("\n", 0, pos) + 1
    for _ in range(offset):
        if start == 0:
            return None
        start = content.rfind("\n", 0, start - 1) + 1
    starts: list[int] = []
    texts: list[str] = []
    m = len(query.lines)
    newline = -1
    for i in range(m):
        if i:
            if newline == -1:
                return None  # the file ends before the window does
            start = newline + 1
        newline = content.find("\n", start)
        text = content[start:] if newline == -1 else content[start:newline]
        if newline != -1 and text.endswith("\r"):
            text = text[:-1]
        starts.append(start)
        texts.append(text)
    # old_string ending with a line break the file's last line lacks: the same slip
    # as a CRLF/LF mismatch, but only for a real last line, not the empty one after it.
    drop_eol = query.trail and newline == -1
    if drop_eol and starts[-1] == len(content):
        return None
    found = _level(query, texts, top)
    if found is None:
        return None
    level, reindent = found
    begin = starts[0]
    if level == LINE_ENDINGS and query.open_start:
        begin += len(texts[0]) - len(query.lines[0])
    if drop_eol:
        end = len(content)
    elif query.trail:
        end = newline + 1
    elif level == LINE_ENDINGS and query.open_end:
        end = starts[-1] + len(query.lines[-1])
    else:
        end = starts[-1] + len(texts[-1])
    return Window(first, m, begin, end, level, reindent, drop_eol)


def _level(query: Query, texts: list[str], top: int) -> tuple[int, Reindent | None] | None:
    """The lowest level (up to `top`) at which `texts` match the query's lines."""
    lines = query.lines
    if _same_but_line_endings(query, texts):
        return LINE_ENDINGS, None
    if top >= TRAILING_WHITESPACE and all(
        f.rstrip() == o.rstrip() for f, o in zip(texts, lines, strict=True)
    ):
        return TRAILING_WHITESPACE, None
    if top < INDENTATION or not all(
        f.strip() == o.strip() for f, o in zip(texts, lines, strict=True)
    ):
        return None
    pairs = [
        (leading_ws(f), leading_ws(o)) for f, o in zip(texts, lines, strict=True) if not is_blank(o)
    ]
    reindent = indent_map(pairs, texts, lines)
    return None if reindent is None else (INDENTATION, reindent)


def _same_but_line_endings(query: Query, texts: list[str]) -> bool:
    last = len(texts) - 1
    for i, (f, o) in enumerate(zip(texts, query.lines, strict=True)):
        tail = i == 0 and query.open_start
        head = i == last and query.open_end
        if tail and head:
            return False  # a one-line fragment: only the exact search applies
        if tail:
            ok = f.endswith(o)
        elif head:
            ok = f.startswith(o)
        else:
            ok = f == o
        if not ok:
            return False
    return True
