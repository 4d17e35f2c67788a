"""What both grep plans share: the result, newest-first keys by lstat, the match cap."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from local_tools.search.scope import LineEvent, Scope
from local_tools.security.syscalls import DIR_FLAGS

__all__ = ["GrepResult", "Mtimes", "cap_events"]


@dataclass
class GrepResult:
    events: list[LineEvent] = field(default_factory=list)  # base-relative paths
    total: int = 0  # matching lines, in all files that may be shown
    files: int = 0  # files with matches
    left_out: int = 0  # files with matches the policy hides
    binary: bool = False  # `path` is a binary file, not searched


class Mtimes:
    """Newest-first sort keys, by lstat relative to an open handle on the base folder.

    A relative lstat saves the kernel walking the base path again for every file
    (about a quarter of the cost per file, measured on 4,600 files).
    """

    def __init__(self, scope: Scope) -> None:
        self._fd: int | None = None
        if os.stat in os.supports_dir_fd:
            try:
                self._fd = os.open(scope.base, DIR_FLAGS)
            except OSError:
                self._fd = None
        abspath = scope.abspath
        self.lstat: Callable[[str], os.stat_result] = (
            functools.partial(os.lstat, dir_fd=self._fd)
            if self._fd is not None
            else lambda path: os.lstat(abspath(path))
        )

    def key(self, path: str) -> int | None:
        try:
            return -self.lstat(path).st_mtime_ns
        except OSError:
            return None  # gone since it was listed

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def cap_events(events: Iterable[LineEvent], limit: int, context: int) -> Iterator[LineEvent]:
    """Events up to the `limit`th match and its trailing context lines."""
    seen = 0
    last: LineEvent | None = None
    for ev in events:
        if seen >= limit:
            assert last is not None
            if ev.is_match or ev.path != last.path or ev.line > last.line + context:
                return
        elif ev.is_match:
            seen += 1
            last = ev
        yield ev
