"""Deleting one located entry: a file, a symlink, or a directory tree.

A symlink is removed, never followed. Recursive deletion works through directory
descriptors, so a directory swapped for a symlink while we empty it is unlinked, not
followed, and symlinks inside are removed without touching their targets. A root is
never deleted, and a recursive delete refuses to empty a nested root or a system
directory.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from contextlib import suppress

from local_tools.core.errors import InvalidInput, PermissionDenied
from local_tools.security.dirfd import Dir, Loc, is_link
from local_tools.security.os_errors import Changed
from local_tools.security.pathparts import shown
from local_tools.security.roots import Roots
from local_tools.security.syscalls import IS_WINDOWS

__all__ = ["delete_entry", "remove_tree"]


def delete_entry(loc: Loc, roots: Roots, path: str, recursive: bool) -> str:
    """Delete the existing entry `loc` names; returns "file", "symlink" or "directory"."""
    real = loc.real
    for root in roots.items:
        if root.path == real:
            raise PermissionDenied(
                f"Path '{shown(path)}' is the {root.kind} {root.path}, which "
                "cannot be deleted. Delete entries inside it."
            )
    roots.check_writable(real, path)
    st = loc.dir.lstat(loc.name)
    if not stat_mod.S_ISDIR(st.st_mode) or is_link(st):
        if IS_WINDOWS and stat_mod.S_ISDIR(st.st_mode):
            loc.dir.rmdir(loc.name)  # a junction is removed like a directory
        else:
            loc.dir.unlink(loc.name)
        return "symlink" if is_link(st) else "file"
    try:
        loc.dir.rmdir(loc.name)
        return "directory"
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    if not recursive:
        raise InvalidInput(
            f"Directory '{shown(path)}' is not empty. Pass recursive=true to "
            "delete it and everything in it."
        )
    roots.refuse_protected_inside(real, path)
    sub = loc.dir.child(loc.name)
    try:
        remove_tree(sub)
    finally:
        sub.close()
    loc.dir.rmdir(loc.name)
    return "directory"


def remove_tree(top: Dir) -> None:
    """Empty `top` through descriptors; symlinks inside are unlinked, not followed."""
    stack: list[tuple[Dir, list[tuple[str, os.stat_result]], str]] = [(top, top.entries(), "")]
    try:
        while stack:
            here, todo, _ = stack[-1]
            if not todo:
                _, _, name = stack.pop()
                if stack:
                    here.close()
                    stack[-1][0].rmdir(name)
                continue
            name, st = todo.pop()
            if stat_mod.S_ISDIR(st.st_mode) and not is_link(st):
                try:
                    sub = here.child(name)
                except Changed:  # swapped for a symlink or removed: not followed
                    with suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                        here.unlink(name)
                    continue
                stack.append((sub, sub.entries(), name))
                continue
            with suppress(FileNotFoundError):
                here.unlink(name)
    finally:
        for d, _, _ in stack[1:]:
            d.close()
