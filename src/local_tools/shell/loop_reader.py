"""Reading a foreground command's output on the caller's event loop, not in a thread.

A command the caller awaits needs no thread of its own: the loop watches both pipes
and a pidfd (Linux), as the reader thread's poll() does. Starting a thread and
waking the loop from it cost a cross-CPU hand-off each, which on a small VM is a
good part of a short command's time. The rules are the reader thread's: the command
is over once its shell exited and both pipes reached end-of-file, or `DRAIN_AFTER_EXIT`
seconds after the shell exited while something it left behind still holds a pipe.

`detach()` stops watching (on the loop's thread) so that a thread can take over:
the command goes on in the background, or the call ends before it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable

__all__ = ["LoopReader"]

_READ_SIZE = 64 * 1024


class LoopReader:
    """Watches `pipes` (fd → what to do with a chunk) and `pidfd` on `loop`.

    `exited()` reaps the shell (True once it is gone); `ended(held)` runs once, on the
    loop, when all is over (`held`: a pipe was still held open after the drain).
    `failed()` runs instead if handling a chunk raised: watching has stopped, and the
    caller reads on by other means (a thread) rather than leave the command unread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pipes: dict[int, Callable[[bytes], None]],
        pidfd: int,
        *,
        exited: Callable[[], bool],
        ended: Callable[[bool], None],
        failed: Callable[[], None],
        drain_after_exit: float,
    ) -> None:
        self._loop = loop
        self._pipes = dict(pipes)
        self._pidfd: int | None = pidfd
        self._exited = exited
        self._ended = ended
        self._failed = failed
        self._drain = drain_after_exit
        self._timer: asyncio.TimerHandle | None = None
        self._gone = False  # the shell exited
        self.active = False
        if sys.platform == "win32":  # RunningCommand uses it on Linux only
            raise NotImplementedError("no add_reader() for pipes on Windows")
        watched: list[int] = []
        try:
            for fd in self._pipes:
                os.set_blocking(fd, False)
                loop.add_reader(fd, self._on_data, fd)
                watched.append(fd)
            loop.add_reader(pidfd, self._on_exit)
        except BaseException:  # a loop that cannot watch pipes (Windows' proactor)
            for fd in watched:
                loop.remove_reader(fd)
            for fd in self._pipes:
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)
            self._pidfd = None  # the caller still owns it
            raise
        self.active = True

    def _on_data(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            try:
                self._pipes[fd](data)
            except Exception:
                # Left registered, the same error would come back on every turn of the
                # loop: stop here and let the caller read on elsewhere.
                self._stop()
                self._failed()
                raise
            return
        self._loop.remove_reader(fd)
        del self._pipes[fd]
        self._maybe_over()

    def _on_exit(self) -> None:
        if not self.active:
            return
        self._unwatch_pid()
        if not self._exited():
            # The pidfd said it is gone but another thread's wait() holds the reaping:
            # look again shortly.
            self._loop.call_later(0.005, self._on_exit)
            return
        self._gone = True
        if self._pipes:
            self._timer = self._loop.call_later(self._drain, self._over, True)
        self._maybe_over()

    def _maybe_over(self) -> None:
        if not self._pipes and self._gone:
            self._over(False)

    def _over(self, held: bool) -> None:
        if not self.active:
            return
        self._stop()
        self._ended(held)

    def _unwatch_pid(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _stop(self) -> None:
        self.active = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._unwatch_pid()
        for fd in self._pipes:
            self._loop.remove_reader(fd)
            if sys.platform != "win32":  # (never there: see __init__)
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)
        self._pipes.clear()

    def detach(self) -> bool:
        """Stop watching (on the loop's thread); False when it was over already."""
        if not self.active:
            return False
        self._stop()
        return True
