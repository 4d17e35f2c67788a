"""Deadlines for the runner: a bare timer handle instead of asyncio.timeout()/wait_for().

Same semantics for the runner's use, a fraction of the per-call cost, which matters
for cheap tools. Kept apart from ``runner`` (the call's steps) to keep each small.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

__all__ = ["cancelling", "with_deadline"]


def cancelling() -> bool:
    """Whether the current task has a cancellation pending from outside (3.11+)."""
    task = asyncio.current_task()
    pending = getattr(task, "cancelling", None)
    return bool(pending()) if pending is not None else False


async def with_deadline(coro: Coroutine[Any, Any, Any], limit: float) -> Any:
    """Await `coro`, cancelling it after `limit` seconds (then TimeoutError).

    A bare timer handle instead of asyncio.timeout()/wait_for(): same semantics for
    this use, a fraction of the per-call cost, which matters for cheap tools.
    """
    task = asyncio.current_task()
    if task is None:  # not inside a task: nothing to cancel, just run it
        return await coro
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    handle = asyncio.get_running_loop().call_later(limit, expire)
    try:
        return await coro
    except asyncio.CancelledError:
        if not expired:
            raise  # cancelled from outside: let it propagate
        _uncancel(task)
        raise TimeoutError from None
    finally:
        handle.cancel()
        if expired and sys.exc_info()[0] is None:
            _uncancel(task)  # the tool swallowed our cancel and finished anyway


def _uncancel(task: asyncio.Task[Any]) -> None:
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    if uncancel is not None:
        uncancel()
