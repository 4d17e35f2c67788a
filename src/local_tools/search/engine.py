"""Which engine searches: ripgrep when there is one, else the pure-Python fallback.

`LOCAL_TOOLS_SEARCH_ENGINE` forces one: `rg` (an error if none is found), `python`,
or `auto` (the default). `LOCAL_TOOLS_RG` names a specific rg binary. Both are read
on every call, so tests and `doctor` can switch engines without reloading anything.

Both engines offer the same calls on a `Scope` (`files` and `file_lists`, `counts`,
`lines`) and give the same answers; `fallback_grep` and `fallback_glob` run the pure-Python
engine uncapped on a plain folder, for benchmarks and equivalence tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator
from itertools import repeat
from operator import itemgetter
from typing import Protocol

from local_tools.core.errors import ExecutionError
from local_tools.search.glob_match import PathGlob
from local_tools.search.grep_fallback import PythonEngine
from local_tools.search.ripgrep import RG_ENV, WALK_FLAGS, RgEngine, find_rg
from local_tools.search.scope import LineEvent, Query, Scope, scope_in

__all__ = [
    "ENGINE_ENV",
    "Engine",
    "engine_info",
    "fallback_glob",
    "fallback_grep",
    "get_engine",
    "rg_path",
    "rg_walk_flags",
]

ENGINE_ENV = "LOCAL_TOOLS_SEARCH_ENGINE"
_PYTHON_NAMES = ("python", "py", "fallback")

Check = Callable[[], None]
Accept = Callable[[str], bool]


class Engine(Protocol):
    name: str

    def describe(self) -> str: ...

    def files(
        self,
        scope: Scope,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[str]: ...

    def file_lists(
        self,
        scope: Scope,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[list[str]]:
        """The files of `files`, in lists as they come: for callers that handle many."""
        ...

    def counts(
        self,
        scope: Scope,
        query: Query,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[tuple[str, int]]: ...

    def lines(
        self,
        scope: Scope,
        query: Query,
        *,
        files: Iterable[str] | None = None,
        max_per_file: int | None = None,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Generator[LineEvent, None, None]: ...


def _choice() -> str:
    return os.environ.get(ENGINE_ENV, "").strip().lower() or "auto"


def get_engine() -> Engine:
    """The engine for this call (see the module docstring)."""
    choice = _choice()
    if choice in _PYTHON_NAMES:
        return PythonEngine()
    if choice not in ("auto", "rg", "ripgrep"):
        raise ExecutionError(
            f"{ENGINE_ENV}={choice!r} is not an engine; use 'rg', 'python' or 'auto'."
        )
    rg = find_rg()
    if rg is not None:
        return RgEngine(rg)
    if choice != "auto":
        raise ExecutionError(
            f"{ENGINE_ENV}={choice} asks for ripgrep, but no usable rg (13 or newer) was "
            f"found on PATH, beside Python or in ${RG_ENV}."
        )
    return PythonEngine()


def engine_info() -> str:
    """One line for `local-tools doctor`: which engine searches, and why."""
    choice = _choice()
    try:
        engine = get_engine()
    except ExecutionError as exc:
        return f"unavailable: {exc.message}"
    if isinstance(engine, RgEngine):
        return engine.describe()
    if choice in _PYTHON_NAMES:
        return f"pure-Python fallback (forced by {ENGINE_ENV}={choice})"
    return "pure-Python fallback (no rg found)"


def rg_path() -> str | None:
    """The rg the tools would run (whatever the engine setting), or None."""
    rg = find_rg()
    return None if rg is None else rg.path


def rg_walk_flags() -> list[str]:
    """The rg flags that decide which files are searched (besides `--ignore-file`)."""
    return list(WALK_FLAGS)


def fallback_grep(
    root: str | os.PathLike[str],
    pattern: str,
    *,
    ignore_case: bool = False,
    include: str | None = None,
) -> Iterator[tuple[str, int]]:
    """Every (path, line) the pure-Python engine finds under `root`, uncapped, unsorted."""
    scope = scope_in(root)
    accept = PathGlob(include).matches if include else None
    query = Query(pattern, ignore_case)
    for path, hits in PythonEngine().hits(scope, query, accept=accept, text=False):
        yield from zip(repeat(path), map(itemgetter(0), hits.lines))


def fallback_glob(root: str | os.PathLike[str], pattern: str) -> Iterator[str]:
    """Every file the pure-Python engine lists under `root` for `pattern`, unsorted."""
    scope = scope_in(root)
    return PythonEngine().files(scope, accept=PathGlob(pattern).matches)
