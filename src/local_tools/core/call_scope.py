"""What a sync tool's call opened for itself, closed when that call's run ends.

The runner runs a sync tool's subjects, the policy decision and the tool in one scope
(``Runner._run_blocking``); something opened early in it (read_file opens the file its
subjects resolve, so the policy decides on the very file read) is closed at the end
whether the tool ran, was refused or waits for a person's answer. Closing here rather
than by garbage collection: a refused call's traceback may hold it in a cycle.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["call_scope", "close_at_end"]


class _Closable(Protocol):
    def close(self) -> None: ...


_open: contextvars.ContextVar[list[_Closable] | None] = contextvars.ContextVar(
    "call_scope_open", default=None
)


def close_at_end(thing: _Closable) -> bool:
    """Close `thing` when the current call's run ends; False outside a call's scope
    (the caller then closes it itself)."""
    held = _open.get()
    if held is None:
        return False
    held.append(thing)
    return True


@contextmanager
def call_scope() -> Iterator[None]:
    held: list[_Closable] = []
    token = _open.set(held)
    try:
        yield
    finally:
        _open.reset(token)
        for thing in reversed(held):
            thing.close()
