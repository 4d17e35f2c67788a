"""Paths as sequences of components, and paths as shown in messages.

The jail never decides containment by comparing strings: ``/ws-evil`` starts with
``/ws`` but is not inside it. Paths are split into an anchor plus components and
compared component by component (case-insensitively on Windows). These helpers are
pure text; nothing here touches the disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import PureWindowsPath

from local_tools.security.syscalls import IS_WINDOWS

__all__ = ["abs_parts", "is_abs", "rel_parts", "shown", "split"]


def shown(path: object) -> str:
    """The user's path, printable and short enough for a message."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
    if not isinstance(text, str):
        text = repr(text)
    if any(ord(c) < 32 for c in text):
        text = repr(text)[1:-1]
    return text if len(text) <= 200 else text[:200] + "…"


def _key(part: str) -> str:
    return part.lower() if IS_WINDOWS else part


def abs_parts(path: str) -> tuple[str, ...]:
    """Anchor and components of an absolute path; `.` and empty dropped, `..` kept."""
    if IS_WINDOWS:
        return PureWindowsPath(path).parts
    return ("/", *(c for c in path.split("/") if c not in ("", ".")))


def rel_parts(parts: Sequence[str], base: Sequence[str]) -> list[str] | None:
    """Components of `parts` below `base`, or None when it is not inside (component-wise)."""
    if len(parts) < len(base):
        return None
    if any(_key(a) != _key(b) for a, b in zip(parts, base, strict=False)):
        return None
    return list(parts[len(base) :])


def split(path: str) -> list[str]:
    seps = "\\/" if IS_WINDOWS else "/"
    for sep in seps[1:]:
        path = path.replace(sep, seps[0])
    return [c for c in path.split(seps[0]) if c not in ("", ".")]


def is_abs(path: str) -> bool:
    return PureWindowsPath(path).is_absolute() if IS_WINDOWS else path.startswith("/")
