"""The pure-Python search engine: the same files, lines and counts as ripgrep.

Files come from `walk.walk_files` (ripgrep's ignore rules, no symlinks), each file
is searched whole by `text_search` (whole-file regex, never line by line), and the
regex is the pattern translated by `regex_translate`. It offers the three calls the
ripgrep engine offers, so `results` treats both alike.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator

from local_tools.search.scope import LineEvent, Query, Scope
from local_tools.search.text_search import Hits, compile_query, search_file
from local_tools.search.walk import walk_files

__all__ = ["PythonEngine"]

Check = Callable[[], None]
Accept = Callable[[str], bool]
_BLOCK = 512  # paths per list from `file_lists`
_new = tuple.__new__


def _events(path: str, hits: Hits, context: int) -> Iterator[LineEvent]:
    if not context:
        # tuple.__new__ skips NamedTuple's Python-level __new__: this runs once per hit.
        yield from [_new(LineEvent, (path, line_no, text, True)) for line_no, text in hits.lines]
        return
    lines = hits.all_lines()
    wanted: set[int] = set()
    for line_no, _ in hits.lines:
        wanted.update(range(max(1, line_no - context), min(len(lines), line_no + context) + 1))
    matched = {line_no for line_no, _ in hits.lines}
    for n in sorted(wanted):
        yield LineEvent(path, n, lines[n - 1], n in matched)


class PythonEngine:
    """Walk with `walk_files`, search with `re`; the interface of the ripgrep engine."""

    name = "python"

    def describe(self) -> str:
        return "pure-Python fallback"

    def files(
        self,
        scope: Scope,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[str]:
        if scope.is_file:
            yield scope.rel
            return
        yield from walk_files(scope.base, scope.rel, scope.parent_lines, accept=accept, check=check)

    def file_lists(
        self,
        scope: Scope,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[list[str]]:
        block: list[str] = []
        for path in self.files(scope, accept=accept, check=check):
            block.append(path)
            if len(block) >= _BLOCK:
                yield block
                block = []
        if block:
            yield block

    def hits(
        self,
        scope: Scope,
        query: Query,
        *,
        files: Iterable[str] | None = None,
        max_per_file: int | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
        text: bool = True,
    ) -> Iterator[tuple[str, Hits]]:
        """Each file with a match, and its matching lines (this engine only).

        `text=False` when only the line numbers count: texts may be left "".
        """
        compiled = compile_query(query)
        paths = files if files is not None else self.files(scope, accept=accept, check=check)
        for path in paths:
            if check is not None:
                check()
            found = search_file(scope.abspath(path), compiled, max_per_file, check, text)
            if found is not None:
                yield path, found

    def counts(
        self,
        scope: Scope,
        query: Query,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[tuple[str, int]]:
        for path, found in self.hits(scope, query, accept=accept, check=check, text=False):
            yield path, len(found.lines)

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
    ) -> Generator[LineEvent, None, None]:
        found = self.hits(
            scope, query, files=files, max_per_file=max_per_file, accept=accept, check=check
        )
        for path, hits in found:
            yield from _events(path, hits, query.context)
