"""Searching one file's text the way ripgrep does, in pure Python.

A file is read the way ripgrep reads it: a UTF-8 byte order mark is dropped, UTF-16
with a byte order mark is decoded, other bytes as UTF-8 (invalid sequences become
U+FFFD); CRLF line endings count as LF (ripgrep runs with `--crlf`), so `$` matches
before `\\r\\n` and no `\\r` ends a line's text. A file with a NUL byte is binary and
skipped — anywhere in the file, where ripgrep only looks at the first 64 KB buffer
of a file found by walking (a larger file with a late NUL may differ).

The text is searched whole with one compiled regex (`re.MULTILINE`), never split
into lines first: match offsets are mapped to line numbers by counting newlines
between matches, and the search resumes at the next line, so a line counts once
however many matches it holds. Like ripgrep, the longest literal every match must
contain (a top-level run of plain characters in the pattern) is looked for first:
a file whose bytes lack it is not decoded at all, and otherwise only the lines
holding it are given to the regex.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from local_tools.core.errors import InvalidInput
from local_tools.search.regex_translate import RegexSyntaxError, UnsupportedRegex, translate
from local_tools.search.scope import Query

try:  # the parser behind `re`, for the literal prefilter
    import re._parser as _sre_parse  # type: ignore[import-not-found]
    from re._constants import LITERAL as _LITERAL  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]
    from sre_constants import LITERAL as _LITERAL  # type: ignore[no-redef]

__all__ = ["Compiled", "Hits", "compile_query", "decode", "read_text", "search_file"]

_O_READ = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_WINDOW = 1 << 18  # characters searched per `re` call over a whole text
Check = Callable[[], None]
# Under re.IGNORECASE these ASCII letters also match non-ASCII ones (KELVIN SIGN,
# LONG S, dotted and dotless I), which an ASCII-lowercased text would not show.
_FOLD_UNSAFE = re.compile(r"[^\x20-\x7e]|[iksIKS]")


@dataclass(frozen=True)
class Compiled:
    """A query ready to run: the regex, and the literals every match contains."""

    regex: re.Pattern[str]
    folded: bool = False  # ignore case: the literals are lowercase ASCII
    literal_bytes: bytes | None = None  # UTF-8 (when folded: right for ASCII bytes only)
    safe_bytes: bytes | None = None  # folded: a literal right for non-ASCII bytes too
    anchor: str | None = None  # a literal at a fixed offset from every match's start
    anchor_offset: int = 0

    def needle_for(self, data: bytes) -> bytes | None:
        """A literal every match in these (UTF-8) bytes contains; lowercase when folded."""
        if not self.folded or data.isascii():
            return self.literal_bytes
        return self.safe_bytes


def compile_query(query: Query) -> Compiled:
    """The query's Rust regex as a Python one; InvalidInput when it cannot be."""
    try:
        source = translate(query.pattern)
    except UnsupportedRegex as exc:
        raise InvalidInput(f"Invalid regex {query.pattern!r}: {exc}.") from None
    except RegexSyntaxError as exc:
        raise InvalidInput(
            f"Invalid regex {query.pattern!r}: {exc}. The pattern uses Rust regex syntax "
            "(like ripgrep); escape special characters such as ( [ { . * + ? with a "
            "backslash to match them literally."
        ) from None
    flags = re.MULTILINE | (re.IGNORECASE if query.ignore_case else 0)
    try:
        regex = re.compile(source, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise InvalidInput(f"Invalid regex {query.pattern!r}: {exc}.") from None
    runs = _literal_runs(source, flags)
    if query.ignore_case:
        ascii_runs = [
            (r.lower(), w if k == 0 else None)
            for run, w in runs
            for k, r in enumerate(re.split(r"[^\x20-\x7e]", run))
        ]
        safe = _longest([r.lower() for run, _ in runs for r in _FOLD_UNSAFE.split(run)])
    else:
        ascii_runs, safe = runs, None
    literal = _longest([run for run, _ in ascii_runs])
    anchored = [(run, w) for run, w in ascii_runs if w is not None and len(run) >= 3]
    anchor = max(anchored, key=lambda rw: len(rw[0])) if anchored else (None, 0)
    return Compiled(
        regex,
        folded=query.ignore_case,
        literal_bytes=None if literal is None else literal.encode("utf-8"),
        safe_bytes=None if safe is None else safe.encode("ascii"),
        anchor=anchor[0],
        anchor_offset=anchor[1] or 0,
    )


def _literal_runs(source: str, flags: int) -> list[tuple[str, int | None]]:
    """Runs of plain characters at the top level of the pattern: every match has each.

    With each, the width of what precedes it when that is fixed (else None): a match
    then starts exactly that many characters before the run.
    """
    try:
        tree = _sre_parse.parse(source, flags)
        runs: list[tuple[str, int | None]] = []
        current: list[str] = []
        width: int | None = 0
        run_width: int | None = 0
        for item in tree.data:
            op, av = item
            if op is _LITERAL:
                if not current:
                    run_width = width
                current.append(chr(av))
            elif current:
                runs.append(("".join(current), run_width))
                current = []
            if width is not None:
                lo, hi = _sre_parse.SubPattern(tree.state, [item]).getwidth()
                width = width + lo if lo == hi else None
        if current:
            runs.append(("".join(current), run_width))
        return runs
    except Exception:  # only an optimisation
        return []


def _longest(runs: list[str]) -> str | None:
    runs = [run for run in runs if run and "\ufffd" not in run]
    return max(runs, key=len) if runs else None


def _read_bytes(path: str) -> bytes | None:
    try:
        fd = os.open(path, _O_READ)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)
        if len(data) > size:  # it grew since the fstat: read the rest
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


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
    if b"\r\n" in data:
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
    path: str, query: Compiled, limit: int | None = None, check: Check | None = None
) -> Hits | None:
    """The file's matching lines (at most `limit`); None when none, binary or unreadable."""
    data = _read_bytes(path)
    if data is None:
        return None
    if data.startswith(_UTF16_BOMS):  # rare: search the decoded text
        text = decode(data)
        return None if text is None else _search_text(text, query, limit, check)
    needle = query.needle_for(data)
    hay = data.lower() if needle is not None and query.folded else data
    if needle is not None and needle not in hay:
        return None  # every match contains the literal: no need to even decode
    if b"\0" in data:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data, hay = data[3:], hay[3:]
    if b"\r\n" in data:
        data = data.replace(b"\r\n", b"\n")
        hay = data.lower() if query.folded else data
    if needle is not None:
        return _search_lines(data, hay, needle, query, limit, check)
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
    needle: bytes,
    query: Compiled,
    limit: int | None,
    check: Check | None,
) -> Hits | None:
    """The regex run only on the lines whose bytes hold the literal, each decoded alone.

    Equivalent to searching the whole text: a match never spans lines, and `^`, `$`,
    `\\b` see a line's ends the same way alone or inside the text.
    """
    find, rfind, count, line_end = hay.find, data.rfind, data.count, data.find
    search, match = query.regex.search, query.regex.match
    anchor, offset = query.anchor, query.anchor_offset
    found: list[tuple[int, str]] = []
    counted, line_no, tried = 0, 1, 0
    i = find(needle)
    while i >= 0:
        tried += 1
        if check is not None and not tried % 4096:
            check()
        start = rfind(b"\n", 0, i) + 1
        end = line_end(b"\n", i)
        if end < 0:
            end = len(data)
        line = data[start:end].decode("utf-8", "replace")
        if anchor is not None and line.isascii():
            # A match starts `offset` characters before an occurrence of the anchor.
            low = line.lower() if query.folded else line
            j, hit = low.find(anchor), False
            while j >= 0 and not hit:
                hit = j >= offset and match(line, j - offset) is not None
                j = low.find(anchor, j + 1)
        else:
            hit = search(line) is not None
        if hit:
            line_no += count(b"\n", counted, start)
            counted = start
            found.append((line_no, line))
            if limit is not None and len(found) >= limit:
                break
        i = find(needle, end + 1)
    return Hits(found, data) if found else None
