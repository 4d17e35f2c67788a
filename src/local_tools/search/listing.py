"""Every file of a workspace, as the search tools see them, for indexes that keep a list.

`list_files` runs the engine's `--files` walk (ripgrep, or the pure-Python walk that
agrees with it) over a whole root: `.gitignore`, `.ignore` and `.rgignore` honoured,
`.git` skipped, other hidden files kept, symlinks neither followed nor listed, so every
path is a regular file inside the root. Folders named in `exclude_dirs` are skipped at
any depth without being entered, like an ignore file's `name/` line of the lowest rank
(an ignore file that re-includes one with `!name/` wins).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Iterator

from local_tools.core.errors import NotFound
from local_tools.search.engine import get_engine
from local_tools.search.scope import scope_in

__all__ = ["DEFAULT_EXCLUDED_DIRS", "list_files"]

# What openlink's own file listing skips (besides .git, which the engines always skip).
DEFAULT_EXCLUDED_DIRS = ("node_modules", ".next", "dist", "build", "vendor")

_GLOB_META = re.compile(r"([\\*?\[\]{}!#,])")


def _exclude_line(name: str) -> str:
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ValueError(f"exclude_dirs takes folder names, not paths: {name!r}")
    return _GLOB_META.sub(r"\\\1", name) + "/"


def list_files(
    root: str | os.PathLike[str],
    *,
    exclude_dirs: Iterable[str] = DEFAULT_EXCLUDED_DIRS,
    check: Callable[[], None] | None = None,
) -> Iterator[list[str]]:
    """The files under `root`, '/'-separated and relative to it, in blocks as they come.

    Unsorted. `check` is called now and then and may raise to stop the walk (the rg
    process is killed then). Raises NotFound when `root` is missing or not a folder,
    the engine's ExecutionError when ripgrep cannot run.
    """
    scope = scope_in(root)
    if scope.is_file or not os.path.isdir(scope.base):
        raise NotFound(f"Not a folder: {os.fspath(root)}")
    lines = tuple(_exclude_line(name) for name in exclude_dirs)
    if lines:
        scope = dataclasses.replace(scope, parent_lines=(*scope.parent_lines, *lines))
    yield from get_engine().file_lists(scope, check=check)
