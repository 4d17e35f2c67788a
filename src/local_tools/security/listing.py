"""Directory listings: one entry per name, symlinks reported and never followed.

A symlink's target is its link text, read with ``readlink`` relative to the listed
directory's descriptor: it says where the link points without going there, so a
link leading out of the jail can be shown safely (resolving it is refused later).
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass
from typing import Literal

from local_tools.security.dirfd import Dir, is_link
from local_tools.security.syscalls import IS_WINDOWS

__all__ = ["DirEntryInfo", "EntryKind", "entry_kind", "list_entries"]

EntryKind = Literal["file", "directory", "symlink", "other"]

_FILE_ATTRIBUTE_HIDDEN = 0x2


@dataclass(frozen=True)
class DirEntryInfo:
    """One entry of a directory listing. Symlinks are reported, never followed."""

    name: str
    kind: EntryKind
    size: int  # bytes for files, link length for symlinks, 0 for directories
    mtime: float
    is_hidden: bool
    target: str | None = None  # a symlink's text, as stored (None if unreadable)


def entry_kind(st: os.stat_result) -> EntryKind:
    """What an lstat result is; junctions count as symlinks."""
    if is_link(st):
        return "symlink"
    if stat_mod.S_ISDIR(st.st_mode):
        return "directory"
    if stat_mod.S_ISREG(st.st_mode):
        return "file"
    return "other"


def list_entries(d: Dir) -> list[DirEntryInfo]:
    """Entries of `d` sorted by name, with link texts read through its descriptor."""
    out = []
    for name, st in d.entries():
        kind = entry_kind(st)
        hidden = name.startswith(".") or bool(
            getattr(st, "st_file_attributes", 0) & _FILE_ATTRIBUTE_HIDDEN
        )
        size = 0 if kind == "directory" else st.st_size
        target = _link_text(d, name) if kind == "symlink" else None
        out.append(DirEntryInfo(name, kind, size, st.st_mtime, hidden, target))
    out.sort(key=lambda e: e.name)
    return out


def _link_text(d: Dir, name: str) -> str | None:
    try:
        text = d.readlink(name)
    except (OSError, ValueError):  # replaced or removed since the listing
        return None
    if IS_WINDOWS and text.startswith("\\\\?\\"):
        text = text[4:]  # junctions read back with the \\?\ prefix; only a spelling
    return text
