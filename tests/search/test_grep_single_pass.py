"""grep's one-pass plan gives the two-pass plan's answer, and leaves no rg behind.

Real trees, real rg: `grep_single_pass` (one streamed `--heading` run) against
`results._counted` (count, then the newest files' lines) over every case of the
equivalence tree, with filters, the policy, context and small caps.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from local_tools.search import results
from local_tools.search.glob_match import PathGlob
from local_tools.search.grep_single import grep_single_pass
from local_tools.search.newest import GrepResult
from local_tools.search.ripgrep import RgEngine, Ripgrep
from local_tools.search.scope import Query, Scope, scope_in
from search.helpers import SLOW_PATTERN, make_slow_tree, wait_no_rg, write

PATTERNS = ["needle", "foo", r"class \w+error", "^$", "def test_", "qqq_none", "e", "CAFÉ", "ü"]


def _hidden(path: str) -> bool:
    return not path.endswith(("main.py", ".yml", "f007.py"))


def _both(
    engine: RgEngine,
    scope: Scope,
    query: Query,
    include: str | None = None,
    limit: int = 100,
    policy: bool = False,
) -> tuple[GrepResult, GrepResult | None]:
    pattern = PathGlob(include) if include else None
    name_globs = pattern.name_globs if pattern is not None else None
    accept = results._acceptor(engine, scope, pattern)
    allowed = _hidden if policy else None
    two = results._counted(engine, scope, query, name_globs, accept, allowed, limit, None)
    one = grep_single_pass(
        engine,
        scope,
        query,
        name_globs=name_globs,
        accept=accept,
        allowed=allowed,
        limit=limit,
        check=None,
    )
    return two, one


@pytest.mark.parametrize("pattern", PATTERNS)
def test_same_answer_as_two_passes(rg: Ripgrep, tree: Path, pattern: str) -> None:
    engine = RgEngine(rg)
    cases = itertools.product((False, True), (0, 2), ("", "src"), (None, "*.py,!*.md"), (100, 3))
    for k, (ignore_case, context, rel, include, limit) in enumerate(cases):
        query = Query(pattern, ignore_case, context)
        policy = k % 3 == 0
        two, one = _both(engine, scope_in(tree, rel), query, include, limit, policy)
        assert one == two, (pattern, ignore_case, context, rel, include, limit, policy)


def test_same_answer_for_one_file(rg: Ripgrep, tree: Path) -> None:
    engine = RgEngine(rg)
    for rel, context in itertools.product(("src/main.py", "crlf.txt", "long.txt"), (0, 1)):
        for pattern in ("foo", "needle", "o"):
            two, one = _both(engine, scope_in(tree, rel), Query(pattern, context=context))
            assert one == two


def test_many_matches_in_many_files(rg: Ripgrep, tmp_path: Path) -> None:
    # Files with more matches than the cap, context around them, and ties in mtime.
    for n in range(40):
        write(tmp_path, f"d{n % 4}/f{n}.py", "".join(f"x = {k}\nhit {k}\n" for k in range(n * 7)))
    engine = RgEngine(rg)
    for context, limit in ((0, 1), (0, 100), (1, 250), (3, 100)):
        two, one = _both(engine, scope_in(tmp_path), Query("hit", context=context), limit=limit)
        assert one == two
        assert one is not None and one.total == sum(n * 7 for n in range(40))


def test_binary_after_matches_left_out_like_the_count(rg: Ripgrep, tmp_path: Path) -> None:
    # A NUL 1.5 MB in: rg prints the lines before it and a warning; --count drops the file.
    body = b"".join(b"hello %d\n" % i for i in range(300_000))
    write(tmp_path, "late.txt", body[:1_500_000] + b"\0" + body[1_500_000:])
    write(tmp_path, "ok.txt", "hello there\n")
    engine = RgEngine(rg)
    for pattern, context in itertools.product(("hello", "there", "hello 1"), (0, 2)):
        two, one = _both(engine, scope_in(tmp_path), Query(pattern, context=context))
        assert one is not None and one == two
        assert all(ev.path == "ok.txt" for ev in one.events)


def test_large_output_gives_way_and_rg_is_killed(rg: Ripgrep, tmp_path: Path) -> None:
    write(tmp_path, "big.txt", "".join(f"line {k} match\n" for k in range(200_000)))
    engine = RgEngine(rg)
    query = Query("match")
    got = grep_single_pass(
        engine,
        scope_in(tmp_path),
        query,
        name_globs=None,
        accept=None,
        allowed=None,
        limit=100,
        check=None,
        max_stream=64 << 10,
    )
    assert got is None
    assert wait_no_rg() == []
    # grep_lines then counts first: the answer is whole.
    result = results.grep_lines(engine, scope_in(tmp_path), query, limit=100)
    assert result.total == 200_000 and len(result.events) == 100


def test_cancel_kills_rg(rg: Ripgrep, tmp_path: Path) -> None:
    root = make_slow_tree(tmp_path / "slow")
    calls = 0

    class Cancelled(Exception):
        pass

    def check() -> None:
        nonlocal calls
        calls += 1
        if calls > 3:
            raise Cancelled

    with pytest.raises(Cancelled):
        grep_single_pass(
            RgEngine(rg),
            scope_in(root),
            Query(SLOW_PATTERN),
            name_globs=None,
            accept=None,
            allowed=None,
            limit=100,
            check=check,
        )
    assert wait_no_rg() == []
