"""Newest first, at most N: what glob and grep return, computed the same for both engines.

glob: every matching file is counted and stat'ed (its mtime), and the newest N are
kept — over all matches, not the first N found. That one lstat per match is the
floor of glob's cost beyond ripgrep's own listing.

grep, with ripgrep: one streamed rg pass (`grep_single`) gives the exact total and
the lines of the newest files needed for N matches, unless its output grows past
what is worth reading; then two passes. The first has the engine count matching
lines per file (no line text crosses the pipe), which gives the exact total and
the files to stat — only those that matched. The second reads the lines of just
the newest files needed for N matches, and stops at the Nth match and its trailing
context (ripgrep gets `--max-count` and is killed once enough was read). Both give
the same answer; the pure-Python engine always counts first (its counting skips
cutting out lines). Output never grows with the number of matches. (Tried before: a
first pass switching to counting at N+1 matches; with many matches it threw away
20-50 ms, so the one pass here gives way only past `grep_single.MAX_STREAM` bytes.)
"""

from __future__ import annotations

import heapq
import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from local_tools.search.engine import Engine
from local_tools.search.glob_match import PathGlob
from local_tools.search.grep_single import grep_single_pass
from local_tools.search.newest import GrepResult, Mtimes, cap_events
from local_tools.search.ripgrep import RgEngine
from local_tools.search.scope import Query, Scope
from local_tools.search.text_search import read_text

__all__ = ["GlobResult", "GrepResult", "cap_events", "glob_files", "grep_lines"]

Check = Callable[[], None]
Allowed = Callable[[str], bool]  # takes a display path
_MTIME = operator.attrgetter("st_mtime_ns")


def _newest_first(pair: tuple[int, str]) -> tuple[int, str]:
    return -pair[0], pair[1]


@dataclass
class GlobResult:
    files: list[str]  # display paths, newest first
    total: int
    left_out: int = 0  # matching files the policy hides


def _acceptor(
    engine: Engine, scope: Scope, pattern: PathGlob | None
) -> Callable[[str], bool] | None:
    """The exact path filter, or None when the engine's file-name filter is already exact."""
    if pattern is None or (engine.name == "rg" and pattern.names_exact):
        return None
    below = scope.below
    matches = pattern.matches

    def accept(path: str) -> bool:
        return matches(below(path))

    return accept


def _selector(
    engine: Engine, scope: Scope, pattern: PathGlob
) -> Callable[[list[str]], list[str]] | None:
    """`_acceptor` for lists of paths."""
    if engine.name == "rg" and pattern.names_exact:
        return None
    skip = len(scope.rel) + 1 if scope.rel else 0
    return lambda paths: pattern.select(paths, skip)


def glob_files(
    engine: Engine,
    scope: Scope,
    pattern: PathGlob,
    *,
    allowed: Allowed | None = None,
    limit: int = 100,
    check: Check | None = None,
) -> GlobResult:
    # This runs for every matching file, many thousands for a broad glob, so the
    # work is done on whole lists with C-level map, filter and sort, and only the
    # newest `limit` are kept whenever the lists grow past a bound.
    select = _selector(engine, scope, pattern)
    display = scope.display
    mtimes = Mtimes(scope)
    lstat = mtimes.lstat
    times: list[int] = []
    kept: list[str] = []
    bound = max(4 * limit, 8192)
    result = GlobResult([], 0)
    try:
        for paths in engine.file_lists(scope, name_globs=pattern.name_globs, check=check):
            if select is not None:
                paths = select(paths)
            if allowed is not None:
                shown = [p for p in paths if allowed(display(p))]
                result.left_out += len(paths) - len(shown)
                paths = shown
            try:
                found = list(map(_MTIME, map(lstat, paths)))
            except OSError:  # some file went away since it was listed
                paths, found = _still_there(paths, lstat)
            times += found
            kept += paths
            result.total += len(paths)
            if len(times) >= bound:
                times, kept = _newest(times, kept, limit)
    finally:
        mtimes.close()
    result.files = [display(path) for path in _newest(times, kept, limit)[1]]
    return result


def _newest(times: list[int], paths: list[str], limit: int) -> tuple[list[int], list[str]]:
    """The newest `limit` (mtime, path) pairs, newest first, ties by path."""
    if len(times) > limit:
        # Sorting plain ints is several times cheaper than sorting (mtime, path) pairs.
        cutoff = sorted(times, reverse=True)[limit - 1]
        pairs = [(t, p) for t, p in zip(times, paths, strict=True) if t >= cutoff]
    else:
        pairs = list(zip(times, paths, strict=True))
    pairs.sort(key=_newest_first)
    del pairs[limit:]
    return [t for t, _ in pairs], [p for _, p in pairs]


def _still_there(
    paths: list[str], lstat: Callable[[str], os.stat_result]
) -> tuple[list[str], list[int]]:
    kept, times = [], []
    for path in paths:
        try:
            times.append(lstat(path).st_mtime_ns)
        except OSError:
            continue
        kept.append(path)
    return kept, times


def grep_lines(
    engine: Engine,
    scope: Scope,
    query: Query,
    *,
    include: PathGlob | None = None,
    allowed: Allowed | None = None,
    limit: int = 100,
    check: Check | None = None,
) -> GrepResult:
    if scope.is_file:
        if read_text(scope.abspath(scope.rel)) is None:
            return GrepResult(binary=True)
        include, allowed = None, None  # the path itself was authorized by the runner
    name_globs = include.name_globs if include is not None else None
    accept = _acceptor(engine, scope, include)
    if isinstance(engine, RgEngine) and limit > 0:
        single = grep_single_pass(
            engine,
            scope,
            query,
            name_globs=name_globs,
            accept=accept,
            allowed=allowed,
            limit=limit,
            check=check,
        )
        if single is not None:
            return single
    return _counted(engine, scope, query, name_globs, accept, allowed, limit, check)


def _counted(
    engine: Engine,
    scope: Scope,
    query: Query,
    name_globs: list[str] | None,
    accept: Callable[[str], bool] | None,
    allowed: Allowed | None,
    limit: int,
    check: Check | None,
) -> GrepResult:
    """Exact totals from a counting pass, then lines of only the newest files needed."""
    result = GrepResult()

    mtimes = Mtimes(scope)

    def counted() -> Iterator[tuple[int, str, int]]:
        for path, n in engine.counts(
            scope, query, name_globs=name_globs, accept=accept, check=check
        ):
            if allowed is not None and not allowed(scope.display(path)):
                result.left_out += 1
                continue
            key = mtimes.key(path)
            if key is not None:
                result.total += n
                result.files += 1
                yield key, path, n

    # Every file holds at least one match, so the newest `limit` files are enough.
    try:
        newest = heapq.nsmallest(limit, counted())
    finally:
        mtimes.close()
    selected, needed = [], 0
    for _, path, n in newest:
        selected.append(path)
        needed += n
        if needed >= limit:
            break
    stream = engine.lines(scope, query, files=selected, max_per_file=limit + 1, check=check)
    try:
        result.events = list(cap_events(stream, limit, query.context))
    finally:
        stream.close()
    return result
