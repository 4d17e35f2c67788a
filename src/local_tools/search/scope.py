"""What a search covers (`Scope`), what it looks for (`Query`), what it yields (`LineEvent`).

A scope is always a folder or file already resolved inside the jail: its allowed root
(`base`, a real path) and the path below it. Engines work relative to `base` — `rg`
runs with `base` as its working directory — and report '/'-separated paths relative
to it; `display` turns them into what the tools show (workspace-relative, or absolute
in an extra root).
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from local_tools.core.errors import NotFound
from local_tools.search.ignore import parent_ignore_lines
from local_tools.security.jail import Jail

__all__ = ["LineEvent", "Query", "Scope", "scope_for", "scope_in"]


class LineEvent(NamedTuple):
    """One output line of a search: a matching line or a context line around one."""

    path: str  # relative to the scope's base, '/'-separated
    line: int  # 1-based
    text: str  # without its line ending, not yet cut to length
    is_match: bool


@dataclass(frozen=True)
class Query:
    pattern: str  # Rust regex syntax
    ignore_case: bool = False
    context: int = 0


@dataclass(frozen=True)
class Scope:
    base: str  # real absolute path of the allowed root holding the target
    rel: str  # the target below base, '/'-separated; "" for base itself
    is_file: bool
    parent_lines: tuple[str, ...] = ()  # ignore lines of folders above rel (rebased)
    prefix: str = ""  # prepended to base-relative paths for display

    def display(self, path: str) -> str:
        return self.prefix + path

    def abspath(self, path: str) -> str:
        # Concatenation, not os.path.join: this runs once per listed file.
        return f"{self.base}/{path}" if path else self.base

    def below(self, path: str) -> str:
        """A base-relative path made relative to the searched folder."""
        return path[len(self.rel) + 1 :] if self.rel else path


def scope_in(base: str | os.PathLike[str], rel: str = "", *, prefix: str = "") -> Scope:
    """A scope for a folder or file below a trusted root, outside any jail (benchmarks)."""
    base = os.path.realpath(base)
    rel = PurePosixPath(rel.replace(os.sep, "/")).as_posix().strip("/")
    rel = "" if rel == "." else rel
    target = os.path.join(base, *rel.split("/")) if rel else base
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        raise NotFound(f"Path not found: {rel or '.'}") from None
    is_file = stat_mod.S_ISREG(st.st_mode)
    lines = () if is_file else tuple(parent_ignore_lines(base, rel))
    return Scope(base, rel, is_file, lines, prefix)


def scope_for(jail: Jail, path: str) -> Scope:
    """The scope for a tool's `path`, resolved through the jail (symlinks followed there).

    Raises the jail's errors: NotFound, PermissionDenied for paths outside the roots.
    """
    st = jail.stat(path)
    real = jail.resolve(path)
    base = _root_of(jail, real)
    rel = real.relative_to(base).as_posix() if real != base else ""
    is_file = stat_mod.S_ISREG(st.st_mode)
    if not is_file and not stat_mod.S_ISDIR(st.st_mode):
        raise NotFound(f"Path '{path}' is neither a file nor a folder.")
    prefix = "" if base == jail.root else jail.display(base).rstrip("/") + "/"
    lines = () if is_file else tuple(parent_ignore_lines(str(base), rel))
    return Scope(str(base), "" if rel == "." else rel, is_file, lines, prefix)


def _root_of(jail: Jail, real: Path) -> Path:
    """The deepest allowed root holding `real` (roots may nest: the spill dir)."""
    best: Path | None = None
    for root, _writable in jail.roots:
        if (real == root or root in real.parents) and (
            best is None or len(root.parts) > len(best.parts)
        ):
            best = root
    if best is None:  # the jail resolved it, so some root holds it
        raise NotFound(f"Path '{real}' is not inside an allowed root.")
    return best
