"""The pure-Python tree walk: the files `rg --files` would list, with the same rules.

`os.scandir` from a folder already resolved inside the jail; symlinks (to files or
folders) and Windows junctions are never followed nor listed, `.git` is skipped at
any depth, other hidden entries are kept, special files (FIFOs, sockets, devices)
are left out, and ignore files are applied as `ignore` describes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from local_tools.search.ignore import IGNORE_FILE_NAMES, IgnoreMatcher, read_ignore_lines

__all__ = ["walk_files"]

_IS_WINDOWS = os.name == "nt"
_REPARSE_POINT = 0x400  # FILE_ATTRIBUTE_REPARSE_POINT: symlinks and junctions

_Kinds = tuple["IgnoreMatcher | None", ...]
_Chain = tuple[tuple[int, _Kinds], ...]  # (length of the folder prefix in bytes, matchers)


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _is_reparse_point(entry: os.DirEntry[str]) -> bool:
    attributes = getattr(entry.stat(follow_symlinks=False), "st_file_attributes", 0)
    return bool(attributes & _REPARSE_POINT)


def _folder_rules(folder_abs: str, names: set[str]) -> _Kinds | None:
    kinds: list[IgnoreMatcher | None] = []
    for name in IGNORE_FILE_NAMES:
        matcher = None
        if name in names:
            matcher = IgnoreMatcher(read_ignore_lines(os.path.join(folder_abs, name)))
            if matcher.empty:
                matcher = None
        kinds.append(matcher)
    return tuple(kinds) if any(kinds) else None


def _ignored(chain: _Chain, parent: IgnoreMatcher | None, path: bytes, is_dir: bool) -> bool:
    for kind in range(len(IGNORE_FILE_NAMES)):
        for cut, kinds in reversed(chain):
            matcher = kinds[kind]
            if matcher is not None:
                verdict = matcher.match(path[cut:], is_dir)
                if verdict:
                    return verdict > 0
    return parent is not None and parent.match(path, is_dir) > 0


def walk_files(
    base: str,
    folder: str,
    parent_lines: Sequence[str] = (),
    *,
    accept: Callable[[str], bool] | None = None,
    check: Callable[[], None] | None = None,
) -> Iterator[str]:
    """Paths (relative to `base`, '/'-separated) of the files under `folder`.

    `folder` is relative to `base` ("" for `base` itself); `parent_lines` are the
    rebased ignore lines of the folders above it (`ignore.parent_ignore_lines`).
    `accept` filters file paths before they are yielded; `check` is called now and
    then and may raise to stop the walk (cancellation).
    """
    parent = IgnoreMatcher(parent_lines) if parent_lines else None
    if parent is not None and parent.empty:
        parent = None
    start = os.path.join(base, *folder.split("/")) if folder else base
    stack: list[tuple[str, str, _Chain]] = [(start, folder + "/" if folder else "", ())]
    while stack:
        folder_abs, prefix, chain = stack.pop()
        if check is not None:
            check()
        try:
            with os.scandir(folder_abs) as it:
                entries = list(it)
        except OSError:
            continue  # unreadable folder: ripgrep reports it and goes on
        kinds = _folder_rules(folder_abs, {e.name for e in entries})
        if kinds is not None:
            chain = (*chain, (len(_encode(prefix)), kinds))
        has_rules = bool(chain) or parent is not None
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            try:
                if entry.is_symlink() or (_IS_WINDOWS and _is_reparse_point(entry)):
                    continue  # junctions are not symlinks to is_symlink() before 3.12
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            rel = prefix + name
            if has_rules and _ignored(chain, parent, _encode(rel), is_dir):
                continue
            if is_dir:
                stack.append((entry.path, rel + "/", chain))
            elif accept is None or accept(rel):
                yield rel
