"""replace(): what is never applied, the NOT_FOUND message, and 100k-line files."""

from __future__ import annotations

import re

import pytest

from local_tools.core.errors import Conflict, ErrorCode, NotFound
from local_tools.editing.match import Replacement, replace


def _not_found(content: str, old: str) -> NotFound:
    with pytest.raises(NotFound) as info:
        replace(content, old, "REPLACED")
    assert info.value.code is ErrorCode.NOT_FOUND
    return info.value


# --- refusals ---------------------------------------------------------------------


def test_anchor_only_match_is_refused() -> None:
    # First and last lines agree, the middle does not: OpenCode's BlockAnchorReplacer
    # would rewrite this block; we refuse and show the difference.
    content = "def f():\n    a()\n    b()\n    return 1\n"
    error = _not_found(content, "def f():\n    x()\n    y()\n    return 1\n")
    assert "lines 1-4" in error.message
    assert "-    x()" in error.message
    assert "+    a()" in error.message


def test_anchor_only_match_never_spans_thousands_of_lines() -> None:
    body = "".join(f"    keep_{i}()\n" for i in range(3000))
    content = "def start():\n" + body + "def end():\n    pass\n"
    error = _not_found(content, "def start():\n    only_this()\ndef end():\n")
    # The hint is a small block near the top, not lines 1-3002.
    assert error.details["closest_last_line"] - error.details["closest_first_line"] <= 3


def test_non_contiguous_lines_are_refused() -> None:
    content = "a = 1\nb = 2\nINSERTED = 0\nc = 3\n"
    error = _not_found(content, "a = 1\nb = 2\nc = 3\n")
    assert "+INSERTED = 0" in error.message


def test_extra_line_in_old_string_is_refused() -> None:
    content = "one()\ntwo()\nthree()\n"
    error = _not_found(content, "one()\ntwo()\nextra()\nthree()\n")
    assert "-extra()" in error.message


def test_a_typo_is_not_fuzzily_accepted() -> None:
    content = "total = price * quantity\nprint(total)\n"
    error = _not_found(content, "total = price * quantitty\nprint(total)\n")
    assert "-total = price * quantitty" in error.message
    assert "+total = price * quantity" in error.message


def test_blank_line_does_not_match_a_non_blank_line() -> None:
    content = "a()\nb()\nc()\n"
    _not_found(content, "a()\n\nc()\n")


def test_too_different_says_nothing_resembles_it() -> None:
    content = "import os\nimport sys\n\nprint(os.getcwd())\n"
    error = _not_found(content, "SELECT * FROM users WHERE id = 7;")
    assert "no part of the file resembles it" in error.message
    assert "read it again" in error.message


def test_conflict_lists_at_most_ten_lines() -> None:
    content = "x\n" * 25
    with pytest.raises(Conflict) as info:
        replace(content, "x", "y")
    assert "occurs 25 times" in info.value.message
    assert "lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 15 more" in info.value.message


# --- the NOT_FOUND message --------------------------------------------------------


def test_not_found_message_shows_lines_diff_and_advice() -> None:
    content = "".join(f"line {i}\n" for i in range(1, 41))
    content = content.replace("line 21\n", "line 21 changed\n")
    error = _not_found(content, "line 20\nline 21\nline 22\n")
    message = error.message
    assert "The closest block is lines 20-22" in message
    assert "--- old_string\n+++ file lines 20-22\n@@ -1,3 +20,3 @@\n" in message
    assert " line 20\n-line 21\n+line 21 changed\n line 22\n" in message
    assert "Read the file again (around line 20)" in message
    assert "also tried ignoring line endings" in message
    assert error.details == {
        "closest_first_line": 20,
        "closest_last_line": 22,
        "similarity": pytest.approx(error.details["similarity"]),
    }
    assert 0.8 < error.details["similarity"] < 1


def test_not_found_diff_is_capped() -> None:
    content = "".join(f"value_{i} = {i}\n" for i in range(60))
    old = "".join(f"value_{i} = {i + 1000}\n" for i in range(30))
    message = _not_found(content, old).message
    diff = message.split("+++ file lines 1-30\n", 1)[1].split("\nRead the file", 1)[0]
    lines = diff.splitlines()
    assert len(lines) == 21
    assert lines[-1] == "... (41 more diff lines)"


def test_not_found_points_out_invisible_whitespace_differences() -> None:
    content = "items:\n    - a\n    - b\n"
    # One line uses a tab, the other two spaces: no single tab width explains both.
    message = _not_found(content, "items:\n\t- a\n  - b\n").message
    assert "Invisible differences:" in message
    assert "line 2: the file has '    - a', old_string has '\\t- a'" in message


def test_not_found_when_every_line_is_slightly_wrong() -> None:
    filler = "".join(f"x{i} = compute({i})\n" for i in range(500))
    block = "def render_invoice(order):\n    lines = order.items\n    return format_total(lines)\n"
    content = filler + block + filler
    old = "def render_invoce(ordr):\n    line = ordr.items\n    return format_totals(line)\n"
    error = _not_found(content, old)
    assert (error.details["closest_first_line"], error.details["closest_last_line"]) == (501, 503)


# --- 100k-line files (correctness, not timing) ------------------------------------


def _big(eol: str = "\n") -> str:
    lines = []
    for i in range(100_000):
        k = i % 4
        if k == 0:
            lines.append(f"def func_{i}(x):")
        elif k == 1:
            lines.append(f"    value = compute(x, {i})")
        elif k == 2:
            lines.append("    return value")
        else:
            lines.append("")
    return eol.join(lines) + eol


BIG = _big()


def test_big_file_exact_edit() -> None:
    old = "def func_80000(x):\n    value = compute(x, 80001)\n"
    new = "def func_80000(y):\n    value = compute(y, 80001)\n"
    result = replace(BIG, old, new)
    assert result.first_line == 80_001
    assert result.content == BIG.replace(old, new)
    assert result.content.count("\n") == 100_000


def test_big_file_tolerant_edit() -> None:
    # Every line 2 spaces deeper than in the file (a consistent delta).
    old = "  def func_60000(x):\n      value = compute(x, 60001)\n      return value\n"
    new = "  def func_60000(x):\n      value = compute(x, 60001)\n      return value * 2\n"
    result = replace(BIG, old, new)
    assert result.strategy == "indentation"
    assert result.first_line == 60_001
    expected = BIG.replace(
        "def func_60000(x):\n    value = compute(x, 60001)\n    return value\n",
        "def func_60000(x):\n    value = compute(x, 60001)\n    return value * 2\n",
    )
    assert result.content == expected


def test_big_crlf_file_line_endings_edit() -> None:
    big = _big("\r\n")
    result = replace(big, "def func_4(x):\n    value = compute(x, 5)\n", "def func_4(z):\n")
    assert result.strategy == "line_endings"
    assert result.content == big.replace(
        "def func_4(x):\r\n    value = compute(x, 5)\r\n", "def func_4(z):\r\n"
    )
    assert "\n" not in result.content.replace("\r\n", "")


def test_big_file_common_lines_unique_combination() -> None:
    # Both lines of old_string occur 50,000 times; only their sequence is unique, at
    # the boundary. The regex pass finds it without verifying every occurrence.
    content = "    alpha()\n" * 50_000 + "    beta()\n" * 50_000
    result = replace(content, "  alpha()\n  beta()\n", "  alpha()\n  gamma()\n")
    assert result == Replacement(
        "    alpha()\n" * 50_000 + "    gamma()\n" + "    beta()\n" * 49_999,
        "indentation",
        1,
        50_000,
    )


def test_big_file_common_lines_ambiguity_is_a_conflict() -> None:
    with pytest.raises(Conflict) as info:
        replace(BIG, "     return value\n\n", "x\n")
    message = info.value.message
    assert "ignoring indentation" in message
    assert re.search(r"matches at least 2 places \(lines 3-4, 7-8", message)


def test_big_file_not_found_shows_the_right_block() -> None:
    old = "def func_99996(x):\n    value = compute(x, 99997)\n    return valeu\n"
    error = _not_found(BIG, old)
    assert "The closest block is lines 99997-99999" in error.message
    assert "-    return valeu\n+    return value" in error.message


def test_big_file_replace_all_tolerant() -> None:
    result = replace(BIG, "return value\n\n", "return value + 1\n\n", replace_all=True)
    assert result.replacements == 25_000
    assert result.strategy == "exact"
    assert result.content.count("    return value + 1\n") == 25_000
    result = replace(BIG, "  return value  \n", "  return value + 1\n", replace_all=True)
    assert result == Replacement(
        BIG.replace("    return value\n", "    return value + 1\n"), "indentation", 25_000, 3
    )


# --- the regex candidate pass (used when every line of old_string is common) ------

PATH_CASES = [
    ("x = 0\r\nif a:\r\n    b()\r\nend\r\n", "if a:\n    b()\n", "if a:\n    c()\n"),
    ("call(alpha,\r\n     beta)  # note\r\n", "alpha,\n     beta)", "gamma,\n     delta)"),
    (
        "def f():  \n    return 1\t\n\nx = 2\n",
        "def f():\n    return 1\n",
        "def f():\n    return 2\n",
    ),
    ("class A:\n    def f(self):\n        return 1\n", "def f(self):\n    return 1", "pass"),
    ("func() {\n\tif ok {\n\t\trun()\n\t}\n}\n", "    if ok {\n        run()\n", "    go()\n"),
    ("first\nlast line", "last line\n", "new last\n"),
    ("import os\ndef f():\n    pass\nx = 1\n", "\n\ndef f():\n    pass\n\n", "def g():\n"),
    ("def f():\n    return 1\n", "def f():\\n    return 1", "def f():\\n    return 2"),
]


@pytest.mark.parametrize(("content", "old", "new"), PATH_CASES)
def test_regex_candidate_pass_agrees_with_the_anchor_pass(
    monkeypatch: pytest.MonkeyPatch, content: str, old: str, new: str
) -> None:
    from local_tools.editing import strategies

    expected = replace(content, old, new)
    monkeypatch.setattr(strategies, "_ANCHOR_LIMIT", -1)  # every anchor counts as common
    assert replace(content, old, new) == expected


def test_regex_candidate_pass_sees_overlapping_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    from local_tools.editing import strategies

    monkeypatch.setattr(strategies, "_ANCHOR_LIMIT", -1)
    with pytest.raises(Conflict, match=r"2 places \(lines 1-2, 2-3\)"):
        replace("a\r\na\r\na\r\n", "a\na", "b")
