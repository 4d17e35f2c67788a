"""A task running in the background: its own thread and event loop, read and ended like a
background command.

`Toolbox.run`'s loop turns only during a call, so a task that outlives its call needs a
loop of its own. The handle looks like a running command to the process tools (the
toolbox's ProcessManager adopts it): `stdout` holds one line per tool call and then the
answer, `kill` cancels the task (the model request in flight is closed, the tool calls
running are cancelled), `done` is set once its thread has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from local_tools.shell.capture import StreamCapture

__all__ = ["EXIT_CODES", "TaskHandle"]

log = logging.getLogger(__name__)

# How a background task's end reads as an exit code (process_output, process_list).
EXIT_CODES = {"done": 0, "failed": 1, "budget": 2, "killed": 3}

Work = Callable[["TaskHandle"], Coroutine[Any, Any, str]]


class TaskHandle:
    """What the process tools read of a background task (the shape of RunningCommand
    they use); `work(handle)` runs it and returns its final status."""

    def __init__(self, task_id: str, description: str, spill_dir: Path) -> None:
        self.task_id = task_id
        self.command = f"task: {description}"
        self.pid = 0  # no process of its own: a thread of this one
        self.started_at = time.time()
        self.ended_at: float | None = None
        self.exit_code: int | None = None
        self.killed_by: str | None = None
        self.status = "running"
        self.stdout = StreamCapture(spill_dir, f"{task_id}-progress")
        self.stderr = StreamCapture(spill_dir, f"{task_id}-stderr")
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[str] | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._thread: threading.Thread | None = None
        self.on_end: Callable[[], None] | None = None  # run once it is over, before `done`

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    def emit(self, line: str) -> None:
        self.stdout.feed((line.rstrip("\n") + "\n").encode("utf-8", "replace"))

    def start(self, work: Work) -> None:
        self._thread = threading.Thread(
            target=self._run, args=(work,), name=f"local-tools-{self.task_id}", daemon=True
        )
        self._thread.start()

    def kill(self, reason: str) -> None:
        with self._lock:
            if self.done.is_set():
                return
            if self.killed_by is None:
                self.killed_by = reason
            loop, main = self._loop, self._main
        if loop is not None and main is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: it is over
                loop.call_soon_threadsafe(main.cancel)

    def wait(self, timeout: float | None) -> bool:
        return self.done.wait(timeout)

    async def wait_async(self, timeout: float | None) -> bool:
        if self.done.is_set():
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._lock:
            self._waiters.append(entry)
        if self.done.is_set():
            return True
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove(entry)

    # -- the thread

    def _run(self, work: Work) -> None:
        loop = asyncio.new_event_loop()
        status = "failed"
        try:
            main = loop.create_task(work(self))
            with self._lock:
                self._loop, self._main = loop, main
                killed = self.killed_by is not None
            if killed:  # killed before it started
                main.cancel()
            try:
                status = loop.run_until_complete(main)
            except asyncio.CancelledError:
                status = "killed"
                self.emit("[task killed]")
            except BaseException as exc:  # work reports its own failures: this is a bug
                log.exception("background task %s failed", self.task_id)
                self.emit(f"[task failed: {type(exc).__name__}: {exc}]")
            _shut_down(loop)
        finally:
            loop.close()
            if self.on_end is not None:
                try:
                    self.on_end()
                except Exception:
                    log.exception("ending background task %s", self.task_id)
            with self._lock:
                self._loop = self._main = None
                self.status = status
                self.exit_code = EXIT_CODES.get(status, 1)
                self.ended_at = time.time()
                self.stdout.close()
                self.stderr.close()
                self.done.set()
                waiters, self._waiters = self._waiters, []
            for waiter_loop, future in waiters:
                with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                    waiter_loop.call_soon_threadsafe(_resolve, future)


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    """What asyncio.run does after its main task: the rest cancelled, async generators
    and the default executor (the tool calls' worker threads) finished."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
