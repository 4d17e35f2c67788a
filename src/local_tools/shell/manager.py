"""The commands of one Toolbox: background ones to poll, drive and kill; none outlives us.

It also holds the toolbox's background subagent tasks (`adopt`), so one place lists,
polls and kills both; a task's process_id is its task_id (one id to poll, kill and
resume it by, and one that cannot collide with the p1, p2 ... of commands).

Each process belongs to the user who started it: another user's process_id is
NOT_FOUND, as if it did not exist. At most `max_live` run at once; the 30 newest
finished ones stay readable. Closing the manager (the Toolbox closes it) or the
interpreter exiting kills every tree still running.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from local_tools.core.errors import ExecutionError, NotFound
from local_tools.shell.capture import StreamCapture
from local_tools.shell.process import RunningCommand
from local_tools.shell.tree_kill import sweep_cgroups

__all__ = ["Adopted", "AdoptedProcess", "Listed", "ManagedProcess", "ProcessManager"]

KEEP_FINISHED = 30


@dataclass
class ManagedProcess:
    process_id: str
    owner: str
    command: RunningCommand
    background: bool


class Adopted(Protocol):
    """What the process tools read of something that is not a command (a background
    subagent task): the parts of RunningCommand they use."""

    command: str
    pid: int  # 0: no process of its own
    started_at: float
    ended_at: float | None
    exit_code: int | None
    killed_by: str | None
    stdout: StreamCapture
    stderr: StreamCapture

    @property
    def running(self) -> bool: ...

    def kill(self, reason: str) -> None: ...

    def wait(self, timeout: float | None) -> bool: ...

    async def wait_async(self, timeout: float | None) -> bool: ...


@dataclass
class AdoptedProcess:
    process_id: str
    owner: str
    command: Adopted
    background: bool = True


Listed = ManagedProcess | AdoptedProcess


class ProcessManager:
    def __init__(self, spill_dir: Path, *, max_live: int = 8) -> None:
        self.spill_dir = spill_dir
        self.max_live = max_live
        self._lock = threading.Lock()
        self._procs: dict[str, ManagedProcess] = {}
        self._adopted: dict[str, AdoptedProcess] = {}
        self._ids = itertools.count(1)
        self._closed = False
        # Run on every get/list (the process_* tools): returns a note, fed to the
        # stderr of the background commands still running (set by exec_cmd).
        self.on_access: Callable[[], str | None] | None = None
        _live_managers.add(self)

    def start(
        self,
        command: str,
        argv: Sequence[str],
        *,
        owner: str,
        cwd: Path,
        env: Mapping[str, str],
        background: bool,
        stdin: bool,
        hold: bool = False,
        spill_after: tuple[int, int] | None = None,
        pass_fds: tuple[int, ...] = (),
        on_exit: Callable[[], str | None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> ManagedProcess:
        """`loop`: read the output on it (see RunningCommand); the caller detaches."""
        with self._lock:
            if self._closed:
                raise ExecutionError("The toolbox is closing; no new commands start.")
            live = [p for p in self._procs.values() if p.command.running]
            if len(live) >= self.max_live:
                shown = ", ".join(f"{p.process_id} ({p.command.command[:40]})" for p in live)
                raise ExecutionError(
                    f"{len(live)} commands are already running (the limit is {self.max_live}: "
                    f"[limits] max_processes): {shown}. Wait for one with process_output "
                    "block=true, or end one with process_kill."
                )
            process_id = f"p{next(self._ids)}"
            try:
                running = RunningCommand(
                    command, argv, cwd=cwd, env=env, spill_dir=self.spill_dir,
                    name=f"exec-{process_id}", stdin=stdin, hold=hold, spill_after=spill_after,
                    pass_fds=pass_fds, on_exit=on_exit, loop=loop,
                )  # fmt: skip
            except OSError as exc:  # no shell, no fds left, cwd gone: the host refused
                raise ExecutionError(f"Could not start the command: {exc}.") from None
            proc = ManagedProcess(process_id, owner, running, background)
            self._procs[process_id] = proc
            self._forget_old()
            return proc

    def _all(self) -> list[Listed]:
        return [*self._procs.values(), *self._adopted.values()]

    def adopt(self, process_id: str, owner: str, entry: Adopted) -> AdoptedProcess:
        """List, poll and kill `entry` (a background task) with the processes."""
        with self._lock:
            if self._closed:
                raise ExecutionError("The toolbox is closing; nothing new starts.")
            adopted = AdoptedProcess(process_id, owner, entry)
            self._adopted[process_id] = adopted
            finished = [a for a in self._adopted.values() if not a.command.running]
            for old in finished[: max(0, len(finished) - KEEP_FINISHED)]:
                del self._adopted[old.process_id]
            return adopted

    def checked(self) -> str | None:
        """Run `on_access`; its note goes to every running background command's stderr."""
        note = self.on_access() if self.on_access is not None else None
        if note:
            with self._lock:
                running = [p for p in self._procs.values() if p.command.running and p.background]
            for proc in running:
                proc.command.stderr.feed(f"\n[local-tools: {note}]\n".encode())
        return note

    def get(self, process_id: str, owner: str) -> ManagedProcess:
        """A command of `owner`'s (a task is not one: it takes no input)."""
        found = self.find(process_id, owner)
        if isinstance(found, AdoptedProcess):
            raise ExecutionError(
                f"{found.process_id} is a subagent task, not a command: it takes no input. "
                "Read it with process_output, end it with process_kill."
            )
        return found

    def find(self, process_id: str, owner: str) -> Listed:
        """A command or task of `owner`'s; another user's is NOT_FOUND, as if absent."""
        self.checked()
        key = process_id.strip()
        with self._lock:
            proc: Listed | None = self._procs.get(key) or self._adopted.get(key)
            if proc is None or proc.owner != owner:
                known = [p.process_id for p in self._all() if p.owner == owner]
                hint = f" Known: {', '.join(known)}." if known else " There are none."
                raise NotFound(f"No process {process_id!r}.{hint} See process_list.")
            return proc

    def list(self, owner: str) -> list[Listed]:
        """`owner`'s commands and tasks, oldest first."""
        self.checked()
        with self._lock:
            procs = [p for p in self._all() if p.owner == owner]
        return sorted(procs, key=lambda p: p.command.started_at)

    def discard(self, process_id: str) -> None:
        """Forget a finished foreground command (it was never shown as a process)."""
        with self._lock:
            self._procs.pop(process_id, None)

    def end_session(self, owner: str) -> None:
        """The session is over (its client left): end and forget its commands."""
        with self._lock:
            procs = [p for p in self._all() if p.owner == owner]
            for proc in procs:
                self._procs.pop(proc.process_id, None)
                self._adopted.pop(proc.process_id, None)
        _stop(procs, "session ended")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            procs = self._all()
        _stop(procs, "shutdown")
        _live_managers.discard(self)

    def _forget_old(self) -> None:
        finished = [p for p in self._procs.values() if not p.command.running]
        for proc in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self._procs[proc.process_id]


def _stop(procs: list[Listed], reason: str) -> None:
    for proc in procs:
        proc.command.kill(reason)
    for proc in procs:
        proc.command.wait(2.0)


_live_managers: weakref.WeakSet[ProcessManager] = weakref.WeakSet()


@atexit.register
def _kill_everything() -> None:
    # An interpreter that exits without closing its Toolbox must not leave
    # commands running (or cgroups behind).
    for manager in list(_live_managers):
        manager.close()
    sweep_cgroups()
