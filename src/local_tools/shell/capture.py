"""Bounded capture of one output stream of a running command.

A command may print gigabytes; our memory must not grow with it. A `StreamCapture`
keeps the first `head_bytes` and a ring of the last `tail_bytes` (and at most
`max_lines` lines) in memory. Once the output outgrows the ring, everything —
from the first byte — is also written to a spill file: the model gets a head + tail
preview and the path of the whole.

Nor may the disk fill up without anyone approving it (`seq inf &` runs unasked): a
spill file stops at `SPILL_FILE_LIMIT` bytes, and no new one starts while the spill
folder holds `core.output.SPILL_DIR_LIMIT` bytes; `spill_error` then says what was not
saved, and the memory ring still holds the latest output.

Readers come in two kinds: a finished foreground command wants `preview()`; a
background process is polled with `read_new()`, which returns what arrived since the
previous read (and says how much was dropped from memory meanwhile).
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from local_tools.core import output
from local_tools.core.output import spill_folder_bytes

__all__ = ["NewOutput", "Preview", "StreamCapture"]

SpillNamer = Callable[[], Path]

SPILL_FILE_LIMIT = 64 * 1024 * 1024
_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Preview:
    head: bytes
    tail: bytes  # empty when `head` is the whole output
    total_bytes: int
    omitted_bytes: int
    spill_path: Path | None


@dataclass(frozen=True, slots=True)
class NewOutput:
    data: bytes
    skipped_bytes: int  # produced since the last read but no longer in memory
    total_bytes: int
    spill_path: Path | None


class StreamCapture:
    """Thread-safe: one reader thread feeds, any thread reads."""

    def __init__(
        self,
        spill_dir: Path,
        name: str,
        *,
        head_bytes: int = 64 * 1024,
        tail_bytes: int = 1024 * 1024,
        max_lines: int = 5000,
        spill_after_bytes: int | None = None,
        spill_after_lines: int | None = None,
    ) -> None:
        """Memory holds `head_bytes` + the last `tail_bytes` / `max_lines`; the spill
        file starts once the output passes `spill_after_*` (at most the ring's size,
        so the ring still holds every byte when the file is started)."""
        self._spill_dir = spill_dir
        self._name = name
        self._head_limit = head_bytes
        self._tail_limit = tail_bytes
        self._max_lines = max_lines
        self._spill_bytes = min(spill_after_bytes or tail_bytes, tail_bytes)
        self._spill_lines = min(spill_after_lines or max_lines, max_lines)
        self._total_lines = 0
        self._mid_line = False  # memory starts inside a line (its head was dropped)
        self._closed = False  # no more output will come
        self._lock = threading.Lock()
        self._head = bytearray()
        # (absolute offset of the chunk's first byte, chunk, its newline count)
        self._ring: deque[tuple[int, bytes, int]] = deque()
        self._ring_bytes = 0
        self._ring_lines = 0
        self._total = 0
        self._cursor = 0  # offset up to which read_new has handed output out
        self._spill: int | None = None  # fd of the spill file, once opened
        self._spilled = 0  # bytes written to it
        self._reserved = 0  # counted into the folder's use but not written yet
        self.spill_path: Path | None = None
        self.spill_error: str | None = None

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def total_lines(self) -> int:
        return self._total_lines

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            if len(self._head) < self._head_limit:
                self._head += data[: self._head_limit - len(self._head)]
            self._ring.append((self._total, data, data.count(b"\n")))
            self._ring_bytes += len(data)
            self._ring_lines += self._ring[-1][2]
            self._total += len(data)
            self._total_lines += self._ring[-1][2]
            if self._spill is None and self.spill_error is None and self.spill_path is None:
                if self._total > self._spill_bytes or self._total_lines > self._spill_lines:
                    self._open_spill()  # before trimming: the ring still holds every byte
            elif self._spill is not None:
                self._write_spill(data)
            self._trim()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._spill is not None:
                os.close(self._spill)
                self._spill = None

    def preview(self, head_budget: int, tail_budget: int) -> Preview:
        """The first `head_budget` and last `tail_budget` bytes, or all when it fits both."""
        with self._lock:
            total = self._total
            if total <= head_budget + tail_budget and self._ring_start() == 0:
                data = b"".join(chunk for _, chunk, _ in self._ring)
                return Preview(data, b"", total, 0, self.spill_path)
            head = bytes(self._head[:head_budget])
            tail = self._last(min(tail_budget, total - len(head)))
        return Preview(head, tail, total, total - len(head) - len(tail), self.spill_path)

    def last(self, n: int) -> bytes:
        """The last `n` bytes still in memory."""
        with self._lock:
            return self._last(n)

    def read_new(self, limit: int | None = None, max_lines: int | None = None) -> NewOutput:
        """Output since the previous call, oldest first: at most `limit` bytes and
        `max_lines` lines; the rest waits for the next call."""
        with self._lock:
            start = self._ring_start()
            skipped = max(0, start - self._cursor)
            cursor = max(self._cursor, start)
            parts: list[bytes] = []
            for offset, chunk, _ in self._ring:
                if offset + len(chunk) <= cursor:
                    continue
                parts.append(chunk[max(0, cursor - offset) :])
            data = b"".join(parts)
            if skipped and self._mid_line and cursor == start:
                # Memory was cut inside a line: start at the next whole one.
                newline = data.find(b"\n")
                if 0 <= newline < len(data) - 1:
                    skipped += newline + 1
                    cursor += newline + 1
                    data = data[newline + 1 :]
            available = len(data)
            if limit is not None and len(data) > limit:
                data = data[:limit]
            if max_lines is not None and data.count(b"\n") > max_lines:
                data = data[: _nth_newline(data, max_lines)]
            if len(data) < available or not self._closed:
                # The rest comes later: never hand out half a UTF-8 character.
                data = data[: _whole_chars(data)]
            self._cursor = cursor + len(data)
            return NewOutput(data, skipped, self._total, self.spill_path)

    def unread_bytes(self) -> int:
        return self._total - self._cursor

    # -- internals (lock held)

    def _ring_start(self) -> int:
        return self._ring[0][0] if self._ring else self._total

    def _last(self, n: int) -> bytes:
        if n <= 0:
            return b""
        parts: list[bytes] = []
        need = n
        for _, chunk, _ in reversed(self._ring):
            if len(chunk) >= need:
                parts.append(chunk[len(chunk) - need :])
                break
            parts.append(chunk)
            need -= len(chunk)
        return b"".join(reversed(parts))

    def _trim(self) -> None:
        while self._ring:
            over_bytes = self._ring_bytes - self._tail_limit
            over_lines = self._ring_lines - self._max_lines
            if over_bytes <= 0 and over_lines <= 0:
                return
            offset, chunk, lines = self._ring[0]
            cut = max(over_bytes, 0)
            if over_lines > 0:
                cut = max(cut, _nth_newline(chunk, over_lines))
            if cut >= len(chunk):
                self._drop_first()
                continue
            # Cut inside the oldest chunk rather than dropping more than needed.
            rest = chunk[cut:]
            self._mid_line = chunk[cut - 1 : cut] != b"\n"
            dropped_lines = lines - rest.count(b"\n")
            self._ring[0] = (offset + cut, rest, lines - dropped_lines)
            self._ring_bytes -= cut
            self._ring_lines -= dropped_lines
            return

    def _drop_first(self) -> None:
        _, chunk, lines = self._ring.popleft()
        self._mid_line = not chunk.endswith(b"\n")
        self._ring_bytes -= len(chunk)
        self._ring_lines -= lines

    def _open_spill(self) -> None:
        if not output.reserve_spill(self._spill_dir, self._ring_bytes):
            used = spill_folder_bytes(self._spill_dir)
            self.spill_error = (
                f"not saved: the output folder already holds {used // _MB} MB, the most "
                f"kept is {output.SPILL_DIR_LIMIT // _MB} MB (files older than 7 days are removed)"
            )
            return
        self._reserved = self._ring_bytes  # the ring is written first
        try:
            self._spill_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = self._spill_dir / f"{stamp}-{self._name}-{secrets.token_hex(4)}.txt"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            self._spill = os.open(path, flags, 0o600)
            self.spill_path = path
        except OSError as exc:
            self.spill_error = str(exc)
            return
        for _, chunk, _ in self._ring:
            self._write_spill(chunk)

    def _write_spill(self, data: bytes) -> None:
        assert self._spill is not None
        if self._reserved >= len(data):
            self._reserved -= len(data)  # bytes the opening already counted
        elif not output.reserve_spill(self._spill_dir, len(data)):
            self.spill_error = (
                f"the saved output stops here: the output folder holds its most, "
                f"{output.SPILL_DIR_LIMIT // _MB} MB; later output is only in memory"
            )
            os.close(self._spill)
            self._spill = None
            return
        room = SPILL_FILE_LIMIT - self._spilled
        try:
            view = memoryview(data)[:room]
            while view:
                written = os.write(self._spill, view)
                self._spilled += written
                view = view[written:]
        except OSError as exc:  # disk full: keep the preview, say the file is partial
            self.spill_error = f"{exc} (the saved output is incomplete)"
            os.close(self._spill)
            self._spill = None
            return
        if len(data) > room:
            self.spill_error = (
                f"the saved output stops at its first {SPILL_FILE_LIMIT // _MB} MB; later "
                "output is only in memory (the latest part)"
            )
            os.close(self._spill)
            self._spill = None


def _whole_chars(data: bytes) -> int:
    """The length of `data` without a UTF-8 sequence cut short at its end."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte < 0x80:
            return n
        if byte >= 0xC0:  # the lead byte says how long its sequence is
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return n if back >= need else n - back
    return n  # no lead byte in reach: not UTF-8, leave it alone


def _nth_newline(chunk: bytes, n: int) -> int:
    """Offset just past the n-th newline of `chunk` (n >= 1), or len(chunk)."""
    pos = -1
    for _ in range(n):
        pos = chunk.find(b"\n", pos + 1)
        if pos < 0:
            return len(chunk)
    return pos + 1
