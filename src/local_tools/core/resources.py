"""Long-lived things a toolbox's tools share: created on first use, closed with the toolbox.

A shell's background processes, a browser, a database connection: tools reach them
through `ctx.resource(key, factory)` rather than globals, so two toolboxes never
share one, and `Toolbox.close()` ends them all (newest first).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Resources"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class Resources:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}

    def get(self, key: str, factory: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._items:
                self._items[key] = factory()
            return self._items[key]  # type: ignore[no-any-return]

    def peek(self, key: str) -> Any | None:
        """The resource if it was created, without creating it."""
        return self._items.get(key)

    def end_session(self, owner: str) -> None:
        """Tell every resource that can hold per-session things (`end_session(owner)`)."""
        with self._lock:
            items = list(self._items.items())
        for key, item in items:
            end = getattr(item, "end_session", None)
            if end is None:
                continue
            try:
                end(owner)
            except Exception:  # one failing must not keep the others from cleaning up
                log.exception("ending a session in %s failed", key)

    def close(self) -> None:
        with self._lock:
            items = list(self._items.items())
            self._items.clear()
        for key, item in reversed(items):
            close = getattr(item, "close", None)
            if close is None:
                continue
            try:
                close()
            except Exception:  # one failing must not leave the others open
                log.exception("closing %s failed", key)
