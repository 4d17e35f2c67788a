"""Newest first, at most N: what glob and grep return, computed the same for both engines.

glob: every matching file is counted and stat'ed (its mtime), and a heap keeps the
newest N — over all matches, not the first N found.

grep: two passes. The first has the engine count matching lines per file (no line
text crosses the pipe), which gives the exact total and the files to stat — only
those that matched. The second reads the lines of just the newest files needed for
N matches, and stops at the Nth match and its trailing context (ripgrep gets
`--max-count` and is killed once enough was read). Output never grows with the
number of matches. (Measured alternative: a first streaming pass that switches to
counting once it passes N matches. It saves the second rg start when there are few
matches, but its partial pass is wasted whenever there are many — 20-50 ms before rg
happens to reach the N+1st match — so counting first is faster overall.)
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from local_tools.search.engine import Engine
from local_tools.search.glob_match import PathGlob
from local_tools.search.scope import LineEvent, Query, Scope
from local_tools.search.text_search import read_text

__all__ = ["GlobResult", "GrepResult", "cap_events", "glob_files", "grep_lines"]

Check = Callable[[], None]
Allowed = Callable[[str], bool]  # takes a display path


@dataclass
class GlobResult:
    files: list[str]  # display paths, newest first
    total: int
    left_out: int = 0  # matching files the policy hides


@dataclass
class GrepResult:
    events: list[LineEvent] = field(default_factory=list)  # base-relative paths
    total: int = 0  # matching lines, in all files that may be shown
    files: int = 0  # files with matches
    left_out: int = 0  # files with matches the policy hides
    binary: bool = False  # `path` is a binary file, not searched


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


def _mtime_key(scope: Scope, path: str) -> int | None:
    try:
        return -os.lstat(scope.abspath(path)).st_mtime_ns
    except OSError:
        return None  # gone since it was listed


def glob_files(
    engine: Engine,
    scope: Scope,
    pattern: PathGlob,
    *,
    allowed: Allowed | None = None,
    limit: int = 100,
    check: Check | None = None,
) -> GlobResult:
    result = GlobResult([], 0)
    accept = _acceptor(engine, scope, pattern)

    def candidates() -> Iterator[tuple[int, str]]:
        listed = engine.files(scope, name_globs=pattern.name_globs, accept=accept, check=check)
        for path in listed:
            if allowed is not None and not allowed(scope.display(path)):
                result.left_out += 1
                continue
            key = _mtime_key(scope, path)
            if key is not None:
                result.total += 1
                yield key, path

    newest = heapq.nsmallest(limit, candidates())
    result.files = [scope.display(path) for _, path in newest]
    return result


def cap_events(events: Iterable[LineEvent], limit: int, context: int) -> Iterator[LineEvent]:
    """Events up to the `limit`th match and its trailing context lines."""
    seen = 0
    last: LineEvent | None = None
    for ev in events:
        if seen >= limit:
            assert last is not None
            if ev.is_match or ev.path != last.path or ev.line > last.line + context:
                return
        elif ev.is_match:
            seen += 1
            last = ev
        yield ev


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

    def counted() -> Iterator[tuple[int, str, int]]:
        for path, n in engine.counts(
            scope, query, name_globs=name_globs, accept=accept, check=check
        ):
            if allowed is not None and not allowed(scope.display(path)):
                result.left_out += 1
                continue
            key = _mtime_key(scope, path)
            if key is not None:
                result.total += n
                result.files += 1
                yield key, path, n

    # Every file holds at least one match, so the newest `limit` files are enough.
    newest = heapq.nsmallest(limit, counted())
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
