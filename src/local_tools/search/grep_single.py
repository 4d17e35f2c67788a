"""grep in one ripgrep pass: totals and the newest files' lines from the same stream.

rg runs once over the scope with `--heading` output: each file's path once, then
its lines, so a file is cut out of the stream and its lines counted with C-level
`bytes` calls, and only the lines of files that may still be shown are parsed
(`_Newest`). For each file as it starts: the path filter, the policy and one lstat
(its mtime), exactly what the counting pass of the two-pass plan does; a file older
than the newest files already holding `limit` matches is only counted.

The answer is the two-pass plan's (`results._counted`), line for line:
- a file's lines are its first `limit + 1` matches and their context, what the
  second pass gets with `--max-count`; `cap_events` keeps the same events of both;
- a file rg stops at binary data after a match (a NUL past its first buffer) ends
  with a warning line; the counting pass leaves such a file out, so it is dropped.

The stream costs rg the printing of every matching line and us reading it: when it
grows past `MAX_STREAM` bytes (a broad pattern over a large tree), rg is killed and
`None` returned, and the caller counts first instead (`--count` prints one line per
file, about half of rg's work on huge outputs).
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from local_tools.search.newest import GrepResult, Mtimes, cap_events
from local_tools.search.ripgrep import RgEngine, decode_path, line_text
from local_tools.search.scope import LineEvent, Query, Scope

__all__ = ["MAX_STREAM", "grep_single_pass"]

Check = Callable[[], None]
Allowed = Callable[[str], bool]

# Past this much output, counting first is cheaper than reading the rest. Measured on
# the large corpus (17,116 files): rg printing 197 MB of lines (`e`) takes twice its
# `--count`, while 5-9 MB of lines (`import`, `def test_\w+`) cost 10-25% more than
# counting, less than what a restart would throw away.
MAX_STREAM = 32 << 20
_RECORD = re.compile(rb"(\d+)([:-])")
_MATCH_AFTER_NL = re.compile(rb"\n\d+:")
_BINARY_WARNING = b": WARNING: stopped searching binary file"
_KEY = operator.itemgetter(0, 1)


@dataclass
class _File:
    """The file whose lines are coming: what the counting pass would say of it."""

    raw: bytes
    path: str
    shown: bool  # accepted, allowed and still there
    hidden: bool  # a match here is counted in `left_out`
    key: int = 0  # -mtime
    matches: int = 0
    binary: bool = False
    events: list[LineEvent] | None = None  # kept while the file may be shown
    stored: int = 0  # matches in `events`


@dataclass
class _Newest:
    """The newest files needed for `limit` matches, with their lines (the two-pass
    plan's selection, kept as the files come): at most `limit` files."""

    limit: int
    files: list[tuple[int, str, int, list[LineEvent]]] = field(default_factory=list)
    cutoff: tuple[int, str] | None = None  # files after this one are not needed

    def wanted(self, key: int, path: str) -> bool:
        return self.cutoff is None or (key, path) < self.cutoff

    def add(self, key: int, path: str, matches: int, events: list[LineEvent]) -> None:
        bisect.insort(self.files, (key, path, matches, events), key=_KEY)
        needed = 0
        for k, (fkey, fpath, n, _) in enumerate(self.files):
            needed += n
            if needed >= self.limit:
                del self.files[k + 1 :]
                self.cutoff = (fkey, fpath)
                return

    def events(self, context: int) -> list[LineEvent]:
        stream = (ev for _, _, _, events in self.files for ev in events)
        return list(cap_events(stream, self.limit, context))


def _binary_line(segment: bytes, raw: bytes) -> int:
    """How many lines of `segment` are rg's binary-data warning for file `raw`."""
    found, at = 0, segment.find(_BINARY_WARNING)
    while at >= 0:
        start = segment.rfind(b"\n", 0, at) + 1
        if segment.startswith(raw, start) and start + len(raw) == at:
            found += 1
        at = segment.find(_BINARY_WARNING, at + 1)
    return found


def grep_single_pass(
    engine: RgEngine,
    scope: Scope,
    query: Query,
    *,
    name_globs: list[str] | None,
    accept: Callable[[str], bool] | None,
    allowed: Allowed | None,
    limit: int,
    check: Check | None,
    max_stream: int = MAX_STREAM,
) -> GrepResult | None:
    """The two-pass plan's answer from one rg run; None (rg killed) when its output
    grew past `max_stream` bytes."""
    result = GrepResult()
    newest = _Newest(limit)
    context = query.context
    display = scope.display
    mtimes = Mtimes(scope)
    current: _File | None = None
    read = 0

    def start(raw: bytes) -> _File:
        path = decode_path(raw)
        f = _File(raw, path, shown=False, hidden=False)
        if accept is not None and not accept(path):
            return f
        if allowed is not None and not allowed(display(path)):
            f.hidden = True
            return f
        key = mtimes.key(path)
        if key is None:
            return f
        f.shown, f.key = True, key
        if newest.wanted(key, path):
            f.events = []
        return f

    def feed(f: _File, segment: bytes) -> None:
        """Whole lines of the file's output (no line ending at either end)."""
        if not segment:
            return
        if _BINARY_WARNING in segment and _binary_line(segment, f.raw):
            f.binary = True
        elif f.events is not None and f.stored <= limit:
            _parse(f, segment)
        else:  # only counted: C-level, whatever the number of lines
            first = _RECORD.match(segment)
            f.matches += len(_MATCH_AFTER_NL.findall(segment))
            f.matches += first is not None and first.group(2) == b":"

    def _parse(f: _File, segment: bytes) -> None:
        assert f.events is not None
        events, path = f.events, f.path
        for line in segment.split(b"\n"):
            m = _RECORD.match(line)
            if m is None:
                continue
            is_match = m.group(2) == b":"
            f.matches += is_match
            if f.stored <= limit:
                text = line_text(line[m.end() :])
                events.append(LineEvent(path, int(m.group(1)), text, is_match))
                f.stored += is_match

    def finish(f: _File) -> None:
        if f.binary or not f.matches:
            return
        if f.hidden:
            result.left_out += 1
        elif f.shown:
            result.total += f.matches
            result.files += 1
            if f.events is not None and newest.wanted(f.key, f.path):
                newest.add(f.key, f.path, f.matches, f.events)

    stream = engine.heading_blocks(scope, query, name_globs=name_globs, check=check)
    # The stream is the blocks joined by the newline each block boundary dropped. A
    # file's part is its name, a NUL, its lines, and the empty line before the next
    # name: its lines never hold an empty line, so a name starts after the FIRST
    # "\n\n" before its NUL. A name holding a newline cannot be told from lines (a
    # name can read "7:forged line"): such a tree goes to the two-pass plan.
    pending = b""  # an unfinished piece: the separator and the start of the next name
    first = True
    try:
        for block in stream:
            read += len(block)
            if read > max_stream:
                return None
            data = block if first else pending + b"\n" + block
            first = False
            pieces = data.split(b"\0")
            last = len(pieces) - 1
            for i, piece in enumerate(pieces):
                if current is None:  # the stream's first name
                    body, name = b"", piece
                else:
                    body, sep, name = piece.partition(b"\n\n")
                    if not sep:
                        body, name = piece, b""
                if i == last:  # no NUL yet: lines of this file, or a name begun
                    if current is None:
                        pending = piece
                    elif sep:
                        feed(current, body)
                        pending = piece[len(body) :]
                    elif piece.endswith(b"\n"):  # may be half of the separator
                        feed(current, piece[:-1])
                        pending = b"\n"
                    else:
                        feed(current, piece)
                        pending = b""
                    continue
                if b"\n" in name or (current is not None and not sep):
                    return None
                if current is not None:
                    feed(current, body)
                    finish(current)
                current = start(name)
        if current is not None:
            finish(current)
    finally:
        stream.close()
        mtimes.close()
    result.events = newest.events(context)
    return result
