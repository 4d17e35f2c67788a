"""Searching one file's text the way ripgrep does, in pure Python.

A file is read the way ripgrep reads it: a UTF-8 byte order mark is dropped, UTF-16
with a byte order mark is decoded, other bytes as UTF-8 (invalid sequences become
U+FFFD); CRLF line endings count as LF (ripgrep runs with `--crlf`), so `$` matches
before `\\r\\n` and no `\\r` ends a line's text. A file with a NUL byte is binary and
skipped; as in ripgrep, a large file whose first 64 KB hold one is skipped without
reading the rest. A NUL further on also skips the whole file here, where ripgrep
stops at it (a large file with a late NUL may differ).

The text is never split into lines first. Like ripgrep, the literals every match
must contain (top-level runs of plain characters in the pattern) are looked for
first, in the raw bytes (lowercased for ignore-case): a file lacking one is not
decoded at all. Then, fastest first:

- a pattern that starts with a literal runs whole over the text with `finditer`
  (`re` skips from candidate to candidate in C), and the matches' lines and line
  numbers are computed with C-level `map`s (`_all_lines`); for ignore-case on ASCII
  text the regex is lowercased and run on the lowercased bytes;
- otherwise a regex of the literals in match order finds, in C, the lines worth
  trying, and the real regex runs on those lines alone — as bytes when a line is
  ASCII, decoded otherwise (`_search_lines`);
- a pattern with no literal runs over the whole decoded text in windows
  (`_search_text`).

`query_plan` works out the literals, the chains and the regex twins. Each way gives
the same lines: a match never spans lines, and `^`, `$`, `\\b` see a line's ends the
same way alone or inside the text. Counting (`text=False`) skips cutting out the
lines' text.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from itertools import accumulate, chain, repeat
from typing import Any, AnyStr, NamedTuple

from local_tools.search.query_plan import Compiled, compile_query
from local_tools.security.syscalls import READ_FLAGS

__all__ = ["Compiled", "Hits", "compile_query", "decode", "read_text", "search_file"]

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_WINDOW = 1 << 18  # characters searched per `re` call over a whole text
_HEAD = 1 << 16  # ripgrep's first buffer: a NUL there makes a file binary
_PREAD = hasattr(os, "pread")  # not on Windows
_plus_one = (1).__add__

Check = Callable[[], None]


def _read_bytes(path: str, *, skip_binary: bool = False) -> bytes | None:
    """The file's bytes, or None when unreadable.

    `skip_binary`: None also for a file binary by its first 64 KB. Like ripgrep, a
    large file whose first buffer holds a NUL byte is then skipped without reading
    the rest (a compiled library can be tens of megabytes).
    """
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if sys.platform != "win32" and skip_binary and size > _HEAD and _PREAD:
            head = os.pread(fd, _HEAD, 0)
            if b"\0" in head and not head.startswith(_UTF16_BOMS):
                return None
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        chunks = [data]  # it grew since the fstat: read the rest
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _has_crlf(data: bytes) -> bool:
    # A lone "\r" is found with memchr; a two-byte search costs ~15x more (measured).
    return b"\r" in data and b"\r\n" in data


def decode(data: bytes) -> str | None:
    """The text ripgrep would search in these bytes, or None for a binary file."""
    if data.startswith(_UTF16_BOMS):
        codec = "utf-16-le" if data[0] == 0xFF else "utf-16-be"
        text = data[2:].decode(codec, "replace")
        if "\0" in text:
            return None
        return text.replace("\r\n", "\n") if "\r\n" in text else text
    if b"\0" in data:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if _has_crlf(data):
        data = data.replace(b"\r\n", b"\n")
    return data.decode("utf-8", "replace")


class Hits(NamedTuple):
    """The matching lines of one file, and what is needed to show lines around them."""

    lines: list[tuple[int, str]]  # (1-based line number, text) of each matching line
    source: str | bytes  # the searched text (bytes: normalised UTF-8)

    def all_lines(self) -> list[str]:
        text = (
            self.source if isinstance(self.source, str) else self.source.decode("utf-8", "replace")
        )
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        return lines


def read_text(path: str) -> str | None:
    """The file's text as searched; None when it is binary or unreadable."""
    data = _read_bytes(path)
    return None if data is None else decode(data)


def search_file(
    path: str,
    query: Compiled,
    limit: int | None = None,
    check: Check | None = None,
    text: bool = True,
) -> Hits | None:
    """The file's matching lines (at most `limit`); None when none, binary or unreadable.

    `text=False`: the line numbers are what counts; a line's text may be left "".
    """
    data = _read_bytes(path, skip_binary=True)
    if data is None:
        return None
    if data.startswith(_UTF16_BOMS):  # rare: search the decoded text
        decoded = decode(data)
        return None if decoded is None else _search_text(decoded, query, limit, check)
    folded = query.folded
    # Most files lack a case-sensitive literal: they leave by the shortest way.
    if not folded and query.literal_bytes is not None and query.literal_bytes not in data:
        return None
    ascii_only = folded and data.isascii()
    needle, others = query.needle_for(ascii_only)
    hay = data.lower() if needle is not None and folded else data
    if needle is not None and (needle not in hay or not all(o in hay for o in others)):
        return None  # every match contains the literals: no need to even decode
    if b"\0" in data:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data, hay = data[3:], hay[3:]
    if _has_crlf(data):
        data = data.replace(b"\r\n", b"\n")
        hay = data.lower() if folded else data
    line_filter = query.filter_for(ascii_only) if needle is not None else None
    if line_filter is not None and query.literal_start and len(data) <= _WINDOW:
        found: list[tuple[int, str]] | None = None
        if not folded:
            if query.ascii_regex is not None and data.isascii():
                found = _all_lines(data, query.ascii_regex, limit, text_wanted=text)
            else:
                decoded = data.decode("utf-8", "replace")
                found = _all_lines(decoded, query.regex, limit, text_wanted=text)
        elif ascii_only and query.folded_regex is not None:
            found = _all_lines(hay, query.folded_regex, limit, data, text_wanted=text)
        if found is not None:
            return Hits(found, data) if found else None
    if line_filter is not None:
        return _search_lines(data, hay, line_filter, query, limit, check)
    return _search_text(data.decode("utf-8", "replace"), query, limit, check)


def _search_text(text: str, query: Compiled, limit: int | None, check: Check | None) -> Hits | None:
    """Regex searches over the whole text, resumed at the line after each match.

    The text is searched in windows of whole lines: `re` holds the GIL for a whole
    search, so a slow pattern over a large file would otherwise block timeouts and
    cancellation. A window ends at a newline, so `$` there is a real line end.
    """
    found: list[tuple[int, str]] = []
    # A match at the very end of a text ending in "\n" (or of "") is not on a line.
    size = len(text)
    last = size - 1 if text.endswith("\n") else size
    if not text:
        last = -1
    search, find, count = query.regex.search, text.find, text.count
    pos, line_no = 0, 1
    while pos <= last:
        stop = find("\n", pos + _WINDOW) if size - pos > _WINDOW else -1
        stop = size if stop < 0 else stop
        m = search(text, pos, stop)
        if m is None or m.start() > last:
            if stop >= size:
                break
            if check is not None:
                check()
            line_no += count("\n", pos, stop + 1)
            pos = stop + 1
            continue
        start = m.start()
        line_no += count("\n", pos, start)
        line_start = text.rfind("\n", pos, start) + 1 or pos
        end = find("\n", start)
        found.append((line_no, text[line_start : size if end < 0 else end]))
        if end < 0 or (limit is not None and len(found) >= limit):
            break
        pos = end + 1
        line_no += 1
    return Hits(found, text) if found else None


def _search_lines(
    data: bytes,
    hay: bytes,
    line_filter: re.Pattern[bytes],
    query: Compiled,
    limit: int | None,
    check: Check | None,
) -> Hits | None:
    """The regex run only on the lines `line_filter` finds in `hay`, each line alone.

    Equivalent to searching the whole text: a match never spans lines, and `^`, `$`,
    `\\b` see a line's ends the same way alone or inside the text. An ASCII line is
    matched as bytes (most lines, even in files with some UTF-8), others decoded.
    This loop runs once per candidate line, so it is kept short.
    """
    candidate, rfind, count, line_end, find = (
        line_filter.search,
        data.rfind,
        data.count,
        data.find,
        hay.find,
    )
    regex, ascii_regex = query.regex, query.ascii_regex
    anchor, offset, folded = query.anchor, query.anchor_offset, query.folded
    # A non-ASCII anchor (case-sensitive patterns keep their runs whole) cannot be in
    # an ASCII line, where the bytes regex then finds nothing either.
    anchor_bytes = anchor.encode("ascii") if anchor is not None and anchor.isascii() else None
    # The filter starts at the anchor: its match is the line's first usable anchor.
    at_anchor = line_filter is query.line_filter and anchor_bytes == query.literal_bytes
    found: list[tuple[int, str]] = []
    size, counted, line_no, tried = len(data), 0, 1, 0
    m = candidate(hay)
    while m is not None:
        tried += 1
        if check is not None and not tried % 4096:
            check()
        i = m.start()
        start = rfind(b"\n", 0, i) + 1
        end = line_end(b"\n", i)
        if end < 0:
            end = size
        raw = data[start:end]
        text: str | None = None
        if ascii_regex is not None and raw.isascii():
            if anchor_bytes is None:
                hit = ascii_regex.search(raw) is not None
            else:
                # A match starts `offset` characters before an occurrence of the anchor.
                j, hit = (i if at_anchor else find(anchor_bytes, start, end)), False
                while j >= 0 and not hit:
                    k = j - start - offset
                    hit = k >= 0 and ascii_regex.match(raw, k) is not None
                    j = find(anchor_bytes, j + 1, end)
            if hit:
                text = raw.decode("ascii")
        else:
            line = raw.decode("utf-8", "replace")
            if anchor is not None and line.isascii():
                low = line.lower() if folded else line
                j, hit = low.find(anchor), False
                while j >= 0 and not hit:
                    hit = j >= offset and regex.match(line, j - offset) is not None
                    j = low.find(anchor, j + 1)
            else:
                hit = regex.search(line) is not None
            if hit:
                text = line
        if text is not None:
            line_no += count(b"\n", counted, start)
            counted = start
            found.append((line_no, text))
            if limit is not None and len(found) >= limit:
                break
        m = candidate(hay, end + 1)
    return Hits(found, data) if found else None


def _all_lines(
    text: AnyStr,
    regex: re.Pattern[AnyStr],
    limit: int | None,
    shown: AnyStr | None = None,
    *,
    text_wanted: bool = True,
) -> list[tuple[int, str]]:
    """Every matching line of a text, with C-level `map` over the match offsets.

    For a regex that starts with a literal, `finditer` jumps from candidate to
    candidate in C; a match never spans lines, so the lines holding a match are the
    lines of the matches `finditer` finds. Line starts, ends and numbers are then
    computed for all matches at once, about three times cheaper per matching line
    than a Python loop (test files hold thousands of `def test_`). The text is at
    most _WINDOW long, so `re` does not hold the GIL for long. Bytes must be ASCII.
    `shown`: where the lines' text is taken from, when not `text` (which is then the
    lowercased `shown`, at the same offsets). Without `text_wanted` only the numbers
    are computed, the texts left "".
    """
    offsets = [m.start() for m in regex.finditer(text)]
    if not offsets:
        return []
    newline: Any = b"\n" if isinstance(text, bytes) else "\n"
    if not text_wanted:
        gaps = map(text.count, repeat(newline), chain((0,), offsets), offsets)
        line_numbers = list(dict.fromkeys(map(_plus_one, accumulate(gaps))))
        if limit is not None:
            del line_numbers[limit:]
        return list(zip(line_numbers, repeat("")))
    # dict.fromkeys: one entry per line however many matches it holds.
    starts = list(
        dict.fromkeys(map(_plus_one, map(text.rfind, repeat(newline), repeat(0), offsets)))
    )
    if limit is not None:
        del starts[limit:]
    ends = list(map(text.find, repeat(newline), starts))
    if ends[-1] < 0:  # the last line has no newline
        ends[-1] = len(text)
    gaps = map(text.count, repeat(newline), chain((0,), starts), starts)
    numbers = map(_plus_one, accumulate(gaps))
    source = text if shown is None else shown
    lines: Iterator[Any] = map(source.__getitem__, map(slice, starts, ends))
    if isinstance(text, bytes):
        lines = map(bytes.decode, lines)
    return list(zip(numbers, lines, strict=True))
