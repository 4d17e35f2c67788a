"""Searching one file in pure Python: the shortcuts agree with the plain regex search."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from local_tools.search.query_plan import _lowered, compile_query
from local_tools.search.regex_translate import translate
from local_tools.search.scope import Query
from local_tools.search.text_search import search_file


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"class \w+error\b", r"class\ \w+error\b"),
        ("foo.*BAR", "foo.*bar"),
        (r"(Foo|bar)\d", r"(foo|bar)\d"),
        (r"\x41b", "ab"),  # translated to a plain "A" first
        (r"[^\w]X", r"[^\w\n]x"),
        ("a{2,3}", "a{2,3}"),
    ],
)
def test_lowered_keeps_what_case_does_not_touch(pattern: str, expected: str) -> None:
    assert _lowered(translate(pattern)) == expected


@pytest.mark.parametrize(
    "pattern", ["[a-z]+_x", "(?-i:Abc)d", "[]a]", r"[\t]x", "foo[?-_]", r"foo[0-\[]", "x[^@-Z]"]
)
def test_lowered_refuses_what_it_cannot_vouch_for(pattern: str) -> None:
    assert _lowered(translate(pattern)) is None


@pytest.mark.parametrize(
    ("pattern", "ignore_case"),
    [
        (r"def test_\w+", False),
        (r"class \w+error\b", True),
        ("needle", False),
        (r"\w+_needle", False),
    ],
)
def test_numbers_only_gives_the_same_lines(tmp_path: Path, pattern: str, ignore_case: bool) -> None:
    text = (
        "def test_a(): def test_b()\nclass FooError: needle\nx_needle y_needle\n"
        "CLASS BarERROR\nnothing\ndef test_c"
    )
    for name, body in [("ascii.py", text), ("utf8.py", "# é\n" + text)]:
        path = tmp_path / name
        path.write_text(body, encoding="utf-8")
        query = compile_query(Query(pattern, ignore_case))
        full = search_file(str(path), query)
        numbers = search_file(str(path), query, text=False)
        assert full is not None and numbers is not None
        assert [n for n, _ in numbers.lines] == [n for n, _ in full.lines]
        flags = re.IGNORECASE if ignore_case else 0
        lines = body.split("\n")
        want = [i + 1 for i, line in enumerate(lines) if re.search(pattern, line, flags)]
        assert [n for n, _ in full.lines] == want
        assert [t for _, t in full.lines] == [lines[n - 1] for n in want]
