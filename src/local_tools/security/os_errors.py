"""The one boundary between OS errors and ToolErrors, and the retry of a raced operation.

Every jail operation runs inside ``run_operation``. It redoes the operation when a
step finds the tree changed underneath it (``Changed``: a checked directory became a
symlink, a name appeared or vanished between two steps), because the only safe answer
to a race is to resolve again from the root. Any ``OSError`` that escapes becomes a
ToolError with a message a model can act on; nothing else in the jail converts them.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TypeVar

from local_tools.core.errors import (
    AlreadyExists,
    InvalidInput,
    NotFound,
    PermissionDenied,
    StorageError,
    ToolError,
)
from local_tools.security.pathparts import shown

__all__ = ["Changed", "convert", "run_operation"]

T = TypeVar("T")

_RETRIES = 8  # re-resolutions after a concurrent change before giving up


class Changed(Exception):
    """A component changed between two steps of one operation; redo it from the start."""


def run_operation(op: str, path: object, fn: Callable[[], T]) -> T:
    """Run one operation, redoing it if the tree changed underneath, and map
    every OS error to a ToolError (this is the only such boundary)."""
    text = shown(path)
    for _ in range(_RETRIES):
        try:
            return fn()
        except Changed:
            continue
        except ToolError:
            raise
        except OSError as exc:
            raise convert(exc, op, text) from None
        except (ValueError, UnicodeError) as exc:
            raise InvalidInput(f"Path '{text}' is not usable: {exc}.") from None
    raise PermissionDenied(
        f"Path '{text}' kept changing while it was being resolved (a directory or "
        "symlink in it is being replaced). Try again."
    )


def convert(exc: OSError, op: str, shown: str) -> ToolError:
    """One boundary from OS errors to ToolErrors, with messages a model can act on."""
    no = exc.errno
    what = f"Could not {op} '{shown}'"
    if no == errno.ENOENT:
        return NotFound(
            f"Path '{shown}' does not exist. Check the spelling, or list the parent "
            "directory to see what is there."
        )
    if no == errno.EEXIST:
        return AlreadyExists(f"Path '{shown}' already exists.")
    if no == errno.EISDIR:
        return InvalidInput(f"Path '{shown}' is a directory; use list_dir to see its contents.")
    if no == errno.ENOTDIR:
        return NotFound(
            f"Path '{shown}' does not exist: one of its parent components is a file, "
            "not a directory."
        )
    if no == errno.ENOTEMPTY:
        return InvalidInput(
            f"Directory '{shown}' is not empty. Pass recursive=true to delete it and "
            "everything in it."
        )
    if no == errno.ELOOP:
        return InvalidInput(f"Path '{shown}' goes through too many symlinks (a symlink loop?).")
    if no == errno.ENAMETOOLONG:
        return InvalidInput(f"Path '{shown}' is too long. Use a shorter path.")
    if no in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return StorageError(f"{what}: the disk is full or the quota is exhausted. Free space.")
    if no in (errno.EACCES, errno.EPERM):
        return StorageError(
            f"{what}: the operating system denied access. Check the file's permissions."
        )
    if no == errno.EROFS:
        return StorageError(f"{what}: the file system is mounted read-only.")
    if no == errno.EFBIG:
        return StorageError(f"{what}: the file is larger than this system allows.")
    if no in (errno.EBUSY, errno.ETXTBSY):
        return StorageError(f"{what}: it is in use by another process. Try again later.")
    if no == errno.EMFILE:
        return StorageError(f"{what}: too many open files. Try a smaller operation.")
    detail = exc.strerror or exc.__class__.__name__
    return StorageError(f"{what}: {detail} (errno {errno.errorcode.get(no or 0, no)}).")
