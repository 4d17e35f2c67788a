"""Rust regex to Python `re`: the same lines match as with ripgrep; the same refusals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from local_tools.core.errors import InvalidInput
from local_tools.search.grep_fallback import PythonEngine
from local_tools.search.regex_translate import RegexSyntaxError, UnsupportedRegex, translate
from local_tools.search.ripgrep import RgEngine, Ripgrep
from local_tools.search.scope import Query, scope_in
from local_tools.search.text_search import compile_query

SAMPLE = (
    "foo\n"
    "bar foo\n"
    "  baz qux\n"
    "Foo Bar\n"
    "x = 42;  y = 7\n"
    "tab\there\n"
    "café naïve ÉLAN\n"
    "a.b*c+d?e\n"
    "(parens) [brackets] {braces}\n"
    "back\\slash\n"
    "\n"
    "trailing space \n"
    "under_score_word\n"
    "aaa aaaa aaaaa\n"
    "end without newline"
)

AGREE = [
    "foo",
    "^foo",
    "foo$",
    r"\bfoo\b",
    r"\Bo\B",
    r"\d+",
    r"\d{2}",
    r"x{1,}",
    r"a{3}",
    r"a{4,5}",
    r"\w+_\w+",
    r"\s{2,}",
    r"[^\s]+;",
    r"\S+\s\S+",
    r"[[:alpha:]]+ [[:upper:]]",
    r"[[:^alpha:]]{3}",
    r"[[:digit:][:space:]]{3}",
    r"\W\W",
    r"\D{5}",
    r"[^a-z]{4}",
    r"(?i)foo",
    r"(?i)café|ÉLAN",
    r"(?i:bar) foo",
    r"a(?i)B|quX",
    r"(?x) f o o",
    r"(?x)[a b]+c",
    r"(?-u:\w)+",
    r"(?P<name>ba)r",
    r"(?:ba|fo)o",
    r"a**",
    r"o++",
    r"x{2}{1}",
    r"^$",
    r"^",
    r"$",
    r"\x{66}oo",
    r"\x66oo",
    r"\u0066oo",
    r"\u{66}oo",
    r"\.b\*c\+d\?e",
    r"\(parens\) \[brackets\] \{braces\}",
    r"back\\slash",
    r"\tab|\there",
    r"[\t]",
    r"[\x00-\x7f]{10}",
    r"[a-c&x]",
    r"ze?e?",
    r"(?U)a+",
    r"(?s)foo.",
    r"(?m)^bar",
    r"\Abar",
    r"[]a]",
    r"[^]a]{5}",
    r"caf.",
    r"na.ve",
    r"\pL",
]
AGREE_RG14 = [r"\ $", r"(?<word>qu)x", r"\<foo\>", r"\b{start}ba", r"\b{end}", r"\b{start-half}qux"]

REFUSED = {
    "(": "unclosed group",
    ")": "unopened group",
    "[a": "unclosed character class",
    "a{,3}": "repetition quantifier expects a valid decimal",
    "a{x}": "repetition quantifier expects a valid decimal",
    "a{1": "unclosed counted repetition",
    "x{2,1}": "invalid repetition count range",
    "*a": "repetition operator missing expression",
    "{": "repetition operator missing expression",
    "(?)": "repetition operator missing expression",
    "(?z)": "unrecognized flag",
    "(?<=a)b": "look-around",
    "(?!a)": "look-around",
    r"(a)\1": "backreferences are not supported",
    r"\0": "backreferences are not supported",
    r"\e": "unrecognized escape sequence",
    r"\Z": "unrecognized escape sequence",
    r"\k<n>": "unrecognized escape sequence",
    r"a\nb": 'the literal "\\n" is not allowed',
    r"a\x0Ab": 'the literal "\\n" is not allowed',
    r"x\r?$": 'the literal "\\r" is not allowed',
    "(?P<n>a)(?P<n>b)": "duplicate capture group name",
    "[z-a]": "invalid character class range",
    r"[\d-z]": "invalid range boundary",
    "(?#comment)": "unrecognized flag",
}
UNSUPPORTED = [r"\p{Greek}", r"\PL", "[a-c&&b]", "[a[bc]]", r"[x[:^alpha:]]", r"foo\z"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("regex")
    (root / "sample.txt").write_text(SAMPLE, encoding="utf-8")
    return root


def _lines(engine: object, root: Path, pattern: str, ignore_case: bool = False) -> list[int]:
    scope = scope_in(root, "sample.txt")
    return [e.line for e in engine.lines(scope, Query(pattern, ignore_case))]  # type: ignore[attr-defined]


def _agreeing(rg: Ripgrep) -> list[str]:
    return AGREE + (AGREE_RG14 if rg.version >= (14, 0, 0) else [])


def test_same_lines_as_ripgrep(sample: Path, rg: Ripgrep) -> None:
    """Every pattern selects the same lines in Python as in rg; none is trivially empty."""
    nonempty = 0
    for pattern in _agreeing(rg):
        if pattern == r"\pL":
            continue  # rg only: the fallback refuses Unicode classes
        want = _lines(RgEngine(rg), sample, pattern)
        assert _lines(PythonEngine(), sample, pattern) == want, pattern
        nonempty += bool(want)
    assert nonempty >= len(AGREE) - 6


def test_same_lines_ignoring_case(sample: Path, rg: Ripgrep) -> None:
    for pattern in ["FOO", "bar", r"é\w+", "élan", r"(?-i:Foo) bar"]:
        want = _lines(RgEngine(rg), sample, pattern, ignore_case=True)
        assert _lines(PythonEngine(), sample, pattern, ignore_case=True) == want, pattern


@pytest.mark.parametrize(("pattern", "reason"), sorted(REFUSED.items()))
def test_refused_like_ripgrep(pattern: str, reason: str) -> None:
    with pytest.raises(RegexSyntaxError) as info:
        translate(pattern)
    assert not isinstance(info.value, UnsupportedRegex)
    assert reason in str(info.value)


def test_ripgrep_refuses_them_too(sample: Path, rg: Ripgrep) -> None:
    for pattern in REFUSED:
        with pytest.raises(InvalidInput):
            _lines(RgEngine(rg), sample, pattern)


@pytest.mark.parametrize("pattern", UNSUPPORTED)
def test_unsupported_in_fallback_only(pattern: str) -> None:
    with pytest.raises(UnsupportedRegex, match="pure-Python"):
        translate(pattern)
    with pytest.raises(InvalidInput, match="not supported by the pure-Python"):
        compile_query(Query(pattern))


def test_matches_never_span_lines() -> None:
    """Whole-file search must not let \\s, \\W, \\D or [^x] cross a newline."""
    text = "foo\nbar\n"
    for pattern in [r"foo\sbar", r"foo\Wbar", r"foo\Dbar", r"foo[^x]bar", r"foo[\s\S]bar"]:
        assert re.search(translate(pattern), text, re.MULTILINE) is None, pattern
    assert re.search(translate(r"foo\s+x"), "foo  x") is not None


def test_flag_groups_apply_to_the_rest_of_their_group() -> None:
    rx = re.compile(translate("a(?i)b|c"), re.MULTILINE)
    assert rx.fullmatch("aB") and rx.fullmatch("C") and not rx.fullmatch("AB")
    rx = re.compile(translate("(?i)a(?-i:b)"))
    assert rx.fullmatch("Ab") and not rx.fullmatch("AB")


def test_names_become_plain_groups() -> None:
    assert translate("(?P<a.b>x)(?<c>y)") == "(x)(y)"
