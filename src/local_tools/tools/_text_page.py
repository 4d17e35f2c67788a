"""One page of lines from a text file, streamed, for read_file and read_many_files.

Memory stays bounded whatever the file: lines before the page are skipped by counting
newlines in 1 MB chunks, an over-long line is kept up to MAX_LINE_CHARS and the rest
drained in chunks, and the lines after the page are only counted.

Only "\\n" ends a line ("\\r\\n" counts once; a lone "\\r", "\\f" or U+2028 does not), the
same rule the runner's output bounding uses. Two readers implement it:

- ``_ByteLines`` for encodings in which the byte 0x0A always means "\\n" (UTF-8, Latin-1,
  GBK, Shift-JIS, ...): it splits bytes before decoding, and never decodes what it skips;
- ``_DecodedLines`` for the others (UTF-16/32, EBCDIC, ...): it decodes incrementally and
  splits the decoded text.
"""

from __future__ import annotations

import codecs
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from local_tools.core.errors import InvalidInput
from local_tools.text_encoding import TextCodec

__all__ = [
    "CUT_MARKER",
    "MAX_LINE_CHARS",
    "Page",
    "numbered",
    "page_of_lines",
    "read_text_page",
]

MAX_LINE_CHARS = 2000
CUT_MARKER = "... (line cut)"
# A char is at most 4 bytes in the byte-split encodings, so this many bytes always
# holds MAX_LINE_CHARS characters.
_MAX_LINE_BYTES = 4 * MAX_LINE_CHARS + 4
_CHUNK = 1 << 16
_COUNT_CHUNK = 1 << 20
# A UTF-8 file this small is read whole and split at once (see _whole_page).
_WHOLE_BYTES = 1 << 16
Check = Callable[[], None]


class _Undecodable(Exception):
    def __init__(self, line: int, detail: str) -> None:
        super().__init__(detail)
        self.line = line
        self.detail = detail


def _describe(exc: Exception, *, in_line: bool = True) -> str:
    """What went wrong; `in_line`: the error's offsets count from the start of the line."""
    if isinstance(exc, UnicodeDecodeError):
        bad = bytes(exc.object[exc.start : exc.end][:8])
        where = f" at byte {exc.start + 1}" if in_line else ""
        return f"{exc.reason}{where} ({bad!r})"
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------- line sources


@dataclass
class _Line:
    text: str  # without its ending; at most MAX_LINE_CHARS characters
    ending: str  # "\n", "\r\n" or "" (the last line of a file without a final newline)
    cut: bool = False
    problem: str | None = None  # why it could not be decoded


class _Lines(Protocol):
    def skip(self, n: int) -> int: ...
    def next_line(self) -> _Line | None: ...
    def count_rest(self) -> int: ...


def _split_ending(text: str) -> tuple[str, str]:
    if text.endswith("\r\n"):
        return text[:-2], "\r\n"
    if text.endswith("\n"):
        return text[:-1], "\n"
    return text, ""


def _count_newlines(read: Callable[[int], bytes], check: Check) -> tuple[int, bool]:
    """Newlines up to EOF, and whether text follows the last one (a final partial line)."""
    count, partial = 0, False
    for chunk in iter(lambda: read(_COUNT_CHUNK), b""):
        count += chunk.count(b"\n")
        partial = not chunk.endswith(b"\n")
        check()
    return count, partial


class _ByteLines:
    def __init__(self, handle: BinaryIO, codec: TextCodec, check: Check) -> None:
        self.handle = handle
        self.codec = codec
        self.check = check
        self.decoder = codecs.getincrementaldecoder(codec.name)("strict")

    def skip(self, n: int) -> int:
        done, partial = 0, False
        pos = self.handle.tell()
        while done < n:
            chunk = self.handle.read(_COUNT_CHUNK)
            if not chunk:
                return done + partial
            found = chunk.count(b"\n")
            if done + found < n:
                done += found
                pos += len(chunk)
                partial = not chunk.endswith(b"\n")
                self.check()
                continue
            idx = -1
            for _ in range(n - done):
                idx = chunk.index(b"\n", idx + 1)
            self.handle.seek(pos + idx + 1)
            return n
        return done

    def next_line(self) -> _Line | None:
        raw = self.handle.readline(_MAX_LINE_BYTES)
        if not raw:
            return None
        if raw.endswith(b"\n") or len(raw) < _MAX_LINE_BYTES:
            try:
                # final for the last line of a file without a final newline
                text, ending = _split_ending(
                    self.decoder.decode(raw, final=not raw.endswith(b"\n"))
                )
            except ValueError as exc:  # UnicodeError, and codecs that raise plain ValueError
                self.decoder.reset()
                return _Line("", "", problem=_describe(exc))
            cut = len(text) > MAX_LINE_CHARS
            return _Line(text[:MAX_LINE_CHARS], ending, cut)
        # Over-long: keep the head, drain the rest in chunks to find how it ends.
        ending, last = "", raw[-1:]
        for piece in iter(lambda: self.handle.readline(_CHUNK), b""):
            if piece.endswith(b"\n"):
                before = piece[-2:-1] or last
                ending = "\r\n" if before == b"\r" else "\n"
                break
            last = piece[-1:]
            self.check()
        self.decoder.reset()
        try:
            # A fresh decoder, not final: the cut may fall inside a character.
            head = codecs.getincrementaldecoder(self.codec.name)("strict").decode(raw)
        except ValueError as exc:
            return _Line("", "", problem=_describe(exc))
        return _Line(head[:MAX_LINE_CHARS], ending, cut=True)

    def count_rest(self) -> int:
        count, partial = _count_newlines(self.handle.read, self.check)
        return count + partial


class _DecodedLines:
    def __init__(self, handle: BinaryIO, codec: TextCodec, check: Check) -> None:
        self.handle = handle
        self.name = codec.name
        self.check = check
        self.decoder = codecs.getincrementaldecoder(codec.name)("strict")
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # lines wholly before buf[pos:], for error messages

    def _fill(self) -> bool:
        """Decode another chunk into the buffer; False once the file is exhausted."""
        if self.eof:
            return False
        raw = self.handle.read(_CHUNK)
        try:
            text = self.decoder.decode(raw, final=not raw)
        except ValueError as exc:
            line = self.lines_before + self.buf.count("\n", self.pos) + 1
            if isinstance(exc, UnicodeDecodeError):
                line += exc.object[: exc.start].decode(self.name, "replace").count("\n")
            raise _Undecodable(line, _describe(exc, in_line=False)) from None
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        self.eof = not raw
        self.check()
        return True

    def _take(self, end: int) -> str:
        text = self.buf[self.pos : end]
        self.pos = end
        self.lines_before += 1
        return text

    def _errors(self, mode: str) -> None:
        # A decoder that fixes its mode keeps strict.
        with contextlib.suppress(AttributeError, TypeError):
            self.decoder.errors = mode

    def skip(self, n: int) -> int:
        # Bad bytes before the page are not the page's problem.
        self._errors("replace")
        done, partial = 0, False
        while done < n:
            found = self.buf.count("\n", self.pos)
            if done + found >= n:
                for _ in range(n - done):
                    self._take(self.buf.index("\n", self.pos) + 1)
                done = n
                break
            done += found
            self.lines_before += found
            if len(self.buf) > self.pos:
                partial = not self.buf.endswith("\n")
            self.pos = len(self.buf)
            if not self._fill():
                if partial:  # a final line without a newline
                    done += 1
                    self.lines_before += 1
                break
        self._errors("strict")
        return done

    def next_line(self) -> _Line | None:
        while True:
            nl = self.buf.find("\n", self.pos)
            if nl >= 0:
                text, ending = _split_ending(self._take(nl + 1))
                return _Line(text[:MAX_LINE_CHARS], ending, len(text) > MAX_LINE_CHARS)
            if len(self.buf) - self.pos > MAX_LINE_CHARS + 1:
                return self._cut_line()
            if not self._fill():
                if self.pos == len(self.buf):
                    return None
                return _Line(self._take(len(self.buf)), "")

    def _cut_line(self) -> _Line:
        head = self.buf[self.pos : self.pos + MAX_LINE_CHARS]
        last = ""
        while True:
            nl = self.buf.find("\n", self.pos)
            if nl >= 0:
                before = self.buf[nl - 1] if nl > self.pos else last
                self._take(nl + 1)
                return _Line(head, "\r\n" if before == "\r" else "\n", cut=True)
            if len(self.buf) > self.pos:
                last = self.buf[-1]
            self.pos = len(self.buf)
            if not self._fill():
                self.lines_before += 1
                return _Line(head, "", cut=True)

    def count_rest(self) -> int:
        self._errors("replace")
        count, partial = 0, False
        while True:
            rest = self.buf[self.pos :]
            count += rest.count("\n")
            if rest:
                partial = not rest.endswith("\n")
            self.pos = len(self.buf)
            if not self._fill():
                return count + partial


class _ListLines:
    """Lines already in memory (text extracted from a PDF), each ending with "\\n"."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.index = 0

    def skip(self, n: int) -> int:
        done = min(n, len(self.lines) - self.index)
        self.index += done
        return done

    def next_line(self) -> _Line | None:
        if self.index >= len(self.lines):
            return None
        text, ending = _split_ending(self.lines[self.index])
        self.index += 1
        return _Line(text[:MAX_LINE_CHARS], ending, len(text) > MAX_LINE_CHARS)

    def count_rest(self) -> int:
        return len(self.lines) - self.index


# --------------------------------------------------------------------------- pages


@dataclass
class Page:
    content: str  # the exact text of the lines, cut lines marked
    start_line: int
    end_line: int
    total_lines: int
    cut_lines: list[int] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.end_line < self.total_lines or bool(self.cut_lines)


def _page(
    source: _Lines,
    *,
    where: str,
    offset: int,
    limit: int,
    max_bytes: int,
    min_one_line: bool,
    check: Check,
) -> Page:
    skipped = source.skip(offset - 1)
    parts: list[str] = []
    cut: list[int] = []
    size = pending = 0
    while len(parts) < limit:
        number = offset + len(parts)
        line = source.next_line()
        if line is None:
            break
        text = line.text + (CUT_MARKER if line.cut else "") + line.ending
        cost = len(text.encode("utf-8", "surrogatepass"))
        if size + cost > max_bytes and (parts or not min_one_line):
            pending = 1  # read, but left for the next page
            break
        if line.problem is not None:
            raise _Undecodable(number, line.problem)
        parts.append(text)
        size += cost
        if line.cut:
            cut.append(number)
        if len(parts) % 512 == 0:
            check()
    if offset > 1 and not parts and not pending:
        total = skipped
        raise InvalidInput(
            f"offset {offset} is past the end of {where} ({total} lines). "
            f"Use an offset between 1 and {max(total, 1)}."
        )
    end = offset + len(parts) - 1
    return Page("".join(parts), offset, end, end + pending + source.count_rest(), cut)


def read_text_page(
    handle: BinaryIO,
    codec: TextCodec,
    *,
    where: str,
    offset: int,
    limit: int,
    max_bytes: int,
    min_one_line: bool = True,
    check: Check,
) -> Page:
    """Lines offset .. offset+limit-1 of the file, within max_bytes of UTF-8.

    `handle` is positioned anywhere; reading starts after the BOM. `min_one_line`
    returns the first line even when it alone is over max_bytes, so paging always
    moves on. INVALID_INPUT for undecodable text (naming the line) or an offset
    past the end.
    """
    handle.seek(codec.bom_bytes)
    if codec.name == "utf-8":
        data = handle.read(_WHOLE_BYTES + 1)
        if len(data) <= _WHOLE_BYTES:
            page = _whole_page(
                data, where=where, offset=offset, limit=limit, max_bytes=max_bytes,
                min_one_line=min_one_line,
            )  # fmt: skip
            if page is not None:
                return page
        handle.seek(codec.bom_bytes)  # not the simple case: stream it as below
    try:
        source: _Lines = (
            _ByteLines(handle, codec, check)
            if codec.split_bytes
            else _DecodedLines(handle, codec, check)
        )
    except (LookupError, TypeError, ValueError):
        raise InvalidInput(
            f"The encoding {codec.name!r} cannot decode a file. Pass a text encoding "
            "such as 'utf-8' or 'latin-1'."
        ) from None
    try:
        return _page(
            source,
            where=where,
            offset=offset,
            limit=limit,
            max_bytes=max_bytes,
            min_one_line=min_one_line,
            check=check,
        )
    except _Undecodable as exc:
        raise InvalidInput(
            f"{where} is not valid {codec.label}: line {exc.line}: {exc.detail}. Pass "
            "encoding='latin-1' (or the file's real encoding) to read it, or read around "
            "that line with offset/limit.",
            details={"line": exc.line},
        ) from None


def _whole_page(
    data: bytes, *, where: str, offset: int, limit: int, max_bytes: int, min_one_line: bool
) -> Page | None:
    """The page `_page` would build from a small UTF-8 file held whole, in a few list
    operations instead of a line object per line; None when the file needs the
    streaming reader's care (undecodable bytes, a line it would cut), which then gives
    the answer. Lines of at most MAX_LINE_CHARS bytes are never cut or drained."""
    pieces = data.split(b"\n")
    if max(map(len, pieces)) > MAX_LINE_CHARS:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    # Each line keeps its "\n" (a "\r\n" keeps both); a final "" is no line, a final
    # line without a newline is one.
    if lines[-1] == "":
        lines.pop()
        total = len(lines)
        ended = total
    else:
        total = len(lines)
        ended = total - 1
    start = min(offset - 1, total)
    parts: list[str] = []
    size = pending = 0
    index = start
    stop = min(total, start + limit)
    while index < stop:
        line = lines[index] + "\n" if index < ended else lines[index]
        cost = len(line.encode("utf-8"))
        if size + cost > max_bytes and (parts or not min_one_line):
            pending = 1
            break
        parts.append(line)
        size += cost
        index += 1
    if offset > 1 and not parts and not pending:
        raise InvalidInput(
            f"offset {offset} is past the end of {where} ({start} lines). "
            f"Use an offset between 1 and {max(start, 1)}."
        )
    end = offset + len(parts) - 1
    return Page("".join(parts), offset, end, max(total, end + pending), [])


def page_of_lines(
    lines: list[str], *, where: str, offset: int, limit: int, max_bytes: int, check: Check
) -> Page:
    """A page of text already split into lines (each with its ending)."""
    return _page(
        _ListLines(lines),
        where=where,
        offset=offset,
        limit=limit,
        max_bytes=max_bytes,
        min_one_line=True,
        check=check,
    )


def numbered(content: str, start: int) -> str:
    """The content with a line number and a tab before each line; only "\\n" ends a line."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = len(str(start + max(len(lines) - 1, 0)))
    return "\n".join(
        f"{n:>{width}}\t{text[:-1] if text.endswith(chr(13)) else text}"
        for n, text in enumerate(lines, start)
    )
