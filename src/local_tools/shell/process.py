"""One running command: spawned in its own session, read by one thread, killed as a tree.

The reader thread polls both output pipes and (on Linux) a pidfd, so it learns
that the shell exited even while an orphaned grandchild still holds the pipes open
— the classic hang. After the shell exits it drains for a moment, then ends
whatever the command left behind: a command's processes end with it (background
work belongs in `background=true`, which keeps the whole tree until it is killed).
A foreground command on Linux is read the same way on the caller's event loop
instead (loop_reader.py), until `detach()` hands it to a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from local_tools.shell.capture import StreamCapture
from local_tools.shell.loop_reader import LoopReader
from local_tools.shell.tree_kill import MARKER_VARIABLE, ProcessTree

__all__ = ["RunningCommand"]

_READ_SIZE = 64 * 1024
# After the shell exits, how long output from what it left behind is still read.
DRAIN_AFTER_EXIT = 0.2
# Without a pidfd the reader wakes this often to see whether the shell exited.
_POLL_INTERVAL = 0.05


class RunningCommand:
    """A spawned command and its captured output. `done` is set when all is over."""

    def __init__(
        self,
        command: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        spill_dir: Path,
        name: str,
        stdin: bool = False,
        max_lines: int = 5000,
        hold: bool = False,
        spill_after: tuple[int, int] | None = None,
        pass_fds: tuple[int, ...] = (),
        on_exit: Callable[[], str | None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """`hold`: argv is a POSIX `shell -c COMMAND`, which may be gated until it is
        in its cgroup (not for sandboxed commands: their PID namespace holds them).
        `spill_after`: (bytes, lines) past which a stream is also saved to a file.
        `on_exit`: run once the whole tree is gone, before `done` is set; the note it
        returns is `exit_note` (and a line of stderr when `report_exit_note` is set).
        `loop`: read the output on this running loop (the caller's thread) instead of
        a thread, where it can; the caller then calls `detach()` before it stops
        waiting for the command."""
        self.command = command
        self.started_at = time.time()
        self.ended_at: float | None = None
        # The shell's convention: a command ended by signal N is 128 + N (SIGKILL: 137),
        # whoever reported it (Popen says -N; bash and bwrap say 128 + N of their child).
        self.exit_code: int | None = None
        self.killed_by: str | None = None  # "timeout", "cancel", "kill", "shutdown"
        self.leftovers_killed = False  # the command left processes that were ended
        self._pipes_held = False
        self._on_exit = on_exit
        self.exit_note: str | None = None
        self.report_exit_note = False  # a background command: its reader sees stderr
        self.done = threading.Event()
        self.started_monotonic = time.monotonic()
        self.duration_ms: float | None = None
        spill_bytes, spill_lines = spill_after or (None, None)
        self.stdout, self.stderr = (
            StreamCapture(
                spill_dir,
                f"{name}-{stream}",
                max_lines=max_lines,
                spill_after_bytes=spill_bytes,
                spill_after_lines=spill_lines,
            )
            for stream in ("stdout", "stderr")
        )
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiters_lock = threading.Lock()
        self.activity = threading.Condition()  # notified on every chunk of output
        self.last_output: float | None = None  # time.monotonic() of the latest chunk
        marker = secrets.token_hex(8)
        self.tree = ProcessTree(marker)
        full_env = dict(env)
        full_env[MARKER_VARIABLE] = marker
        argv = list(argv)
        gated = hold and self.tree.prepare()
        if gated:
            # The shell first reads one line from stdin, which we write only once it is
            # in its cgroup: nothing it forks can start outside. (No preexec_fn: Python
            # between fork and exec is unsafe in a threaded process.) Reads stop at the
            # newline, so later input — or end-of-file — is what the command sees.
            argv[-1] = f"read -r _; {argv[-1]}"
        try:
            self.popen = subprocess.Popen(
                argv,
                cwd=str(cwd),
                env=full_env,
                stdin=subprocess.PIPE if stdin or gated else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
                pass_fds=pass_fds,  # () is Popen's default
            )
        except BaseException:
            self.tree.release()
            raise
        self.pid = self.popen.pid
        self.tree.adopt(self.pid)
        if gated:
            assert self.popen.stdin is not None
            with contextlib.suppress(OSError):  # the shell died already: the reader sees it
                self.popen.stdin.write(b"\n")
                self.popen.stdin.flush()
            if not stdin:
                self.close_input()
        self._name = name
        self._loop_reader: LoopReader | None = None
        self._loop_thread = threading.get_ident()  # where a loop reader runs
        if loop is None or not self._read_on(loop):
            self._start_thread()

    def _start_thread(self) -> None:
        reader = threading.Thread(
            target=self._read_all, name=f"local-tools-{self._name}", daemon=True
        )
        reader.start()

    def _read_on(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Watch the pipes and a pidfd on `loop`; False where that cannot be done."""
        if not sys.platform.startswith("linux"):
            return False
        assert self.popen.stdout is not None and self.popen.stderr is not None
        pidfd = _pidfd(self.pid)
        if pidfd is None:
            return False
        pipes = {self.popen.stdout.fileno(): self.stdout, self.popen.stderr.fileno(): self.stderr}
        try:
            self._loop_reader = LoopReader(
                loop,
                {fd: functools.partial(self._feed, capture) for fd, capture in pipes.items()},
                pidfd,
                exited=lambda: self.popen.poll() is not None,
                ended=self._loop_ended,
                failed=self._loop_failed,
                drain_after_exit=DRAIN_AFTER_EXIT,
            )
        except (NotImplementedError, OSError, RuntimeError):
            os.close(pidfd)
            return False
        return True

    def detach(self) -> None:
        """On the loop's thread: a thread reads from now on, if the loop did so far
        (the command runs on in the background, or nobody awaits it any more)."""
        reader, self._loop_reader = self._loop_reader, None
        if reader is not None and reader.detach():
            self._start_thread()

    # -- state

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    @property
    def accepts_input(self) -> bool:
        return self.popen.stdin is not None and not self.popen.stdin.closed and self.running

    def write_input(self, data: bytes, timeout: float) -> int:
        """Write what the process takes of `data` within `timeout` s; returns the bytes
        written (fewer when it stops reading and the pipe fills up)."""
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            raise BrokenPipeError("stdin is closed")
        if sys.platform == "win32":  # no poll() on pipes there
            stdin.write(data)
            stdin.flush()
            return len(data)
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        deadline = time.monotonic() + timeout
        view, written = memoryview(data), 0
        while written < len(data):
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                break
            try:
                written += os.write(fd, view[written:])
            except BlockingIOError:
                continue
        return written

    def close_input(self) -> None:
        if self.popen.stdin is not None:
            with contextlib.suppress(OSError):
                self.popen.stdin.close()

    # -- waiting

    def wait(self, timeout: float | None) -> bool:
        if self._loop_reader is not None and threading.get_ident() == self._loop_thread:
            # Blocking the loop that reads it (a Toolbox closed on its own loop): the
            # command could not end meanwhile. A thread reads it instead.
            self.detach()
        return self.done.wait(timeout)

    async def wait_async(self, timeout: float | None) -> bool:
        """True when the command finished within `timeout` seconds (None: no limit)."""
        if self.done.is_set():
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._waiters_lock:
            self._waiters.append(entry)
        if self.done.is_set():  # finished between the check and the registration
            return True
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            with self._waiters_lock, contextlib.suppress(ValueError):
                self._waiters.remove(entry)

    # -- ending

    def kill(self, reason: str) -> None:
        """End the whole tree now; the reader notices and finishes up."""
        if self.done.is_set():
            return
        if self.killed_by is None:
            self.killed_by = reason
        self.tree.kill(scan=True)
        with contextlib.suppress(OSError):
            self.popen.kill()

    # -- the reader thread

    def _read_all(self) -> None:
        try:
            if sys.platform == "win32":
                self._read_with_threads()
            else:
                self._read_with_poll()
        finally:
            self._finish()

    def _read_with_poll(self) -> None:
        if sys.platform == "win32":  # _read_all never calls it there
            raise NotImplementedError("no poll() on Windows pipes")
        assert self.popen.stdout is not None and self.popen.stderr is not None
        streams = {
            self.popen.stdout.fileno(): self.stdout,
            self.popen.stderr.fileno(): self.stderr,
        }
        poller = select.poll()
        for fd in streams:
            poller.register(fd, select.POLLIN)
        pidfd = _pidfd(self.pid)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        exited_at: float | None = None
        try:
            while streams:
                if exited_at is None:
                    timeout_ms = None if pidfd is not None else _POLL_INTERVAL * 1000
                else:
                    left = DRAIN_AFTER_EXIT - (time.monotonic() - exited_at)
                    if left <= 0:
                        self._pipes_held = True  # by something the shell left behind
                        break
                    timeout_ms = left * 1000
                for fd, _ in poller.poll(timeout_ms):
                    if fd == pidfd:
                        poller.unregister(pidfd)
                        continue
                    data = os.read(fd, _READ_SIZE)
                    if data:
                        self._feed(streams[fd], data)
                    else:
                        poller.unregister(fd)
                        del streams[fd]
                if exited_at is None and self.popen.poll() is not None:
                    exited_at = time.monotonic()
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _read_with_threads(self) -> None:  # Windows: no poll() on pipes
        def pump(pipe: object, capture: StreamCapture) -> None:
            read = pipe.read1 if hasattr(pipe, "read1") else pipe.read  # type: ignore[attr-defined]
            while data := read(_READ_SIZE):
                capture.feed(data)
                self.last_output = time.monotonic()
                self._notify()

        pumps = [
            threading.Thread(target=pump, args=(self.popen.stdout, self.stdout), daemon=True),
            threading.Thread(target=pump, args=(self.popen.stderr, self.stderr), daemon=True),
        ]
        for t in pumps:
            t.start()
        self.popen.wait()
        for t in pumps:
            t.join(DRAIN_AFTER_EXIT)

    def _feed(self, capture: StreamCapture, data: bytes) -> None:
        capture.feed(data)
        self.last_output = time.monotonic()
        self._notify()

    def _loop_failed(self) -> None:
        self._loop_reader = None
        self._start_thread()

    def _loop_ended(self, held: bool) -> None:
        """On the loop: the shell exited and its pipes are closed (or `held`)."""
        self._loop_reader = None
        self._pipes_held = held
        self._record_exit()
        if held or not self.tree.ended_whole():
            # Ending what it left behind scans every process: not on the loop.
            threading.Thread(target=self._conclude, args=(True,), daemon=True).start()
        else:
            self._conclude(False)

    def _finish(self) -> None:
        self._record_exit()
        self._conclude(self._pipes_held or not self.tree.ended_whole())

    def _record_exit(self) -> None:
        self.exit_code = shell_exit_code(self.popen.wait())
        self.duration_ms = (time.monotonic() - self.started_monotonic) * 1000

    def _conclude(self, leftovers: bool) -> None:
        if leftovers:
            # The shell is gone but something it started is not (`cmd &`, a daemon).
            self.leftovers_killed = self.killed_by is None
            self.tree.kill(scan=True)
        self.tree.release()
        if self._on_exit is not None:
            try:
                self.exit_note = self._on_exit()
            except Exception as exc:  # the reader thread must finish whatever happens
                self.exit_note = f"the check after the command failed: {exc}"
            if self.exit_note and self.report_exit_note:
                self.stderr.feed(f"\n[local-tools: {self.exit_note}]\n".encode())
        for pipe in (self.popen.stdout, self.popen.stderr, self.popen.stdin):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.stdout.close()
        self.stderr.close()
        self.ended_at = time.time()
        self.done.set()
        self._notify()
        with self._waiters_lock:
            waiters = list(self._waiters)
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future)

    def _notify(self) -> None:
        with self.activity:
            self.activity.notify_all()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _pidfd(pid: int) -> int | None:
    opener: Callable[[int], int] | None = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def shell_exit_code(code: int) -> int:
    """A Popen return code as a shell reports it: 128 + N for a death by signal N (-9:
    137), so one convention holds whether the command died itself or a wrapper (bash,
    bwrap) reported its child's death."""
    return 128 - code if code < 0 else code


def signal_name(code: int | None, *, killed: bool = False) -> str | None:
    """The signal that ended a command local-tools `killed` (137: `SIGKILL`); None
    otherwise. A command that died of a signal by itself has its 128 + N exit code but
    no name: in the sandbox bwrap reports that death as 128 + N, which reads the same
    as `exit 137`, so naming it outside the sandbox only would make the two differ.
    (A raw Popen code, -N, is named as well.)
    """
    if code is None:
        return None
    if code < 0:
        number = -code
    elif killed and 128 < code < 128 + 65:
        number = code - 128
    else:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
