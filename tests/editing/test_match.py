"""replace(): validation, exact matches, line endings, whitespace, escapes, blank lines."""

from __future__ import annotations

import pytest

from local_tools.core.errors import Conflict, ErrorCode, InvalidInput, NotFound
from local_tools.editing.match import STRATEGIES, Replacement, replace

# --- validation -------------------------------------------------------------------


def test_identical_old_and_new_is_invalid() -> None:
    with pytest.raises(InvalidInput, match="identical") as info:
        replace("a = 1\n", "a = 1", "a = 1")
    assert info.value.code is ErrorCode.INVALID_INPUT


def test_empty_old_on_empty_file_creates() -> None:
    assert replace("", "", "hello\nworld\n") == Replacement("hello\nworld\n", "create", 1, 1)


def test_empty_old_on_non_empty_file_is_invalid() -> None:
    with pytest.raises(InvalidInput) as info:
        replace("x = 1\n", "", "y = 2\n")
    assert "old_string is empty but the file is not" in info.value.message
    assert "write_file with overwrite=true" in info.value.message


def test_non_empty_old_on_empty_file_is_not_found() -> None:
    with pytest.raises(NotFound, match="file is empty"):
        replace("", "x", "y")


def test_strategy_names_are_the_documented_set() -> None:
    assert set(STRATEGIES) == {
        "exact",
        "line_endings",
        "trailing_whitespace",
        "indentation",
        "escapes",
        "blank_lines",
        "create",
    }


# --- exact ------------------------------------------------------------------------


def test_exact_unique_match() -> None:
    content = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    result = replace(content, "    return 2", "    return 3")
    assert result == Replacement(
        "def f():\n    return 1\n\ndef g():\n    return 3\n", "exact", 1, 5
    )


def test_exact_several_occurrences_conflict_names_lines() -> None:
    content = "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"
    with pytest.raises(Conflict) as info:
        replace(content, "x = 1", "x = 9")
    message = info.value.message
    assert "occurs 3 times" in message
    assert "lines 1, 3, 5" in message
    assert "replace_all=true" in message
    assert "surrounding lines" in message
    assert info.value.details["lines"] == [1, 3, 5]


def test_exact_overlapping_occurrences_are_ambiguous() -> None:
    # "aa" is in "aaa" twice (at 0 and 1): picking the first would be a guess.
    with pytest.raises(Conflict, match="occurs 2 times"):
        replace("aaa\n", "aa", "b")


def test_exact_replace_all() -> None:
    content = "x = 1\ny = 2\nx = 1\n"
    result = replace(content, "x = 1", "x = 9", replace_all=True)
    assert result == Replacement("x = 9\ny = 2\nx = 9\n", "exact", 2, 1)


def test_exact_replace_all_is_non_overlapping_left_to_right() -> None:
    result = replace("aaaaa", "aa", "b", replace_all=True)
    assert (result.content, result.replacements) == ("bba", 2)


def test_exact_replace_all_with_a_single_occurrence() -> None:
    result = replace("a\nb\n", "b", "c", replace_all=True)
    assert result == Replacement("a\nc\n", "exact", 1, 2)


@pytest.mark.parametrize("meta", [".*", "+?", "[a-z]", "(x)", "{2}", "a|b", "^$", "\\d", "\\"])
def test_regex_metacharacters_are_literal(meta: str) -> None:
    content = f"before\nvalue = r'{meta}'\nafter {meta}x\n"
    result = replace(content, f"value = r'{meta}'", f"value = r'{meta}{meta}'")
    assert result.content == f"before\nvalue = r'{meta}{meta}'\nafter {meta}x\n"


@pytest.mark.parametrize("syntax", ["$&", "$1", "\\1", "\\g<0>", "\\0", "$$", "\\n"])
def test_replacement_syntax_in_new_string_is_literal(syntax: str) -> None:
    content = "name = 'old'\n"
    result = replace(content, "'old'", f"'{syntax}'")
    assert result.content == f"name = '{syntax}'\n"


def test_replacement_syntax_literal_with_replace_all() -> None:
    result = replace("a.a.a", "a", "$&\\1", replace_all=True)
    assert result.content == "$&\\1.$&\\1.$&\\1"


def test_unicode_and_emoji() -> None:
    content = "# 日本語 🎉\ngreeting = '👋 hello'\nfarewell = 'tschüß'\n"
    result = replace(content, "greeting = '👋 hello'", "greeting = '🙂 héllo'")
    assert result.content == "# 日本語 🎉\ngreeting = '🙂 héllo'\nfarewell = 'tschüß'\n"
    assert result.first_line == 2


def test_exact_match_at_end_of_file_without_newline() -> None:
    result = replace("a\nlast", "last", "final")
    assert result.content == "a\nfinal"


# --- line endings -----------------------------------------------------------------


def test_exact_in_crlf_file_writes_new_lines_with_crlf() -> None:
    content = "a = 1\r\nb = 2\r\n"
    result = replace(content, "b = 2", "b = 2\nc = 3")
    assert result == Replacement("a = 1\r\nb = 2\r\nc = 3\r\n", "exact", 1, 2)


def test_exact_with_raw_crlf_in_both_strings_is_taken_as_given() -> None:
    content = "a\r\nb\r\nc\r\n"
    result = replace(content, "a\r\nb", "a\r\nB\r\nb")
    assert result.content == "a\r\nB\r\nb\r\nc\r\n"


def test_exact_in_lf_file_turns_new_crlf_into_lf() -> None:
    result = replace("a\nb\n", "b", "b\r\nc")
    assert result.content == "a\nb\nc\n"


def test_file_without_line_breaks_keeps_new_string_as_given() -> None:
    result = replace("one line", "one", "two\nthree")
    assert result.content == "two\nthree line"


def test_lf_old_string_in_crlf_file() -> None:
    content = "x = 0\r\nif a:\r\n    b()\r\nend\r\n"
    result = replace(content, "if a:\n    b()\n", "if a:\n    c()\n    d()\n")
    assert result == Replacement(
        "x = 0\r\nif a:\r\n    c()\r\n    d()\r\nend\r\n", "line_endings", 1, 2
    )


def test_crlf_old_string_in_lf_file() -> None:
    content = "x = 0\nif a:\n    b()\nend\n"
    result = replace(content, "if a:\r\n    b()\r\n", "if a:\r\n    c()\r\n")
    assert result == Replacement("x = 0\nif a:\n    c()\nend\n", "line_endings", 1, 2)


def test_line_endings_with_old_string_starting_and_ending_mid_line() -> None:
    content = "call(alpha,\r\n     beta)  # note\r\n"
    result = replace(content, "alpha,\n     beta)", "gamma,\n     delta)")
    assert result.content == "call(gamma,\r\n     delta)  # note\r\n"
    assert result.strategy == "line_endings"


def test_mixed_file_uses_the_matched_regions_majority() -> None:
    content = "a\nb\r\nc\r\nd\r\ne\nf\ng\n"
    # Region "b..d" breaks: CRLF, CRLF (and the final one) -> CRLF
    result = replace(content, "b\nc\nd\n", "B\nC\n")
    assert result.content == "a\nB\r\nC\r\ne\nf\ng\n"
    # Region "e..g" is LF -> LF even though other lines are CRLF
    result = replace(content, "e\r\nf\r\n", "E\r\nF\r\nF2\r\n")
    assert result.content == "a\nb\r\nc\r\nd\r\nE\nF\nF2\ng\n"


def test_mixed_file_replace_all_gives_each_place_its_own_ending() -> None:
    content = "x\r\nmark\r\ny\nmark\nz\n"
    result = replace(content, "mark", "one\ntwo", replace_all=True)
    assert result.content == "x\r\none\r\ntwo\r\ny\none\ntwo\nz\n"
    assert result.replacements == 2


def test_line_endings_ambiguity_is_a_conflict() -> None:
    content = "p\r\nq\r\nx\r\np\r\nq\r\n"
    with pytest.raises(Conflict) as info:
        replace(content, "p\nq", "r")
    assert "ignoring line endings" in info.value.message
    assert "2 places (lines 1-2, 4-5)" in info.value.message


def test_missing_final_newline_is_kept_missing() -> None:
    result = replace("first\nlast line", "last line\n", "new last\n")
    assert result == Replacement("first\nnew last", "line_endings", 1, 2)


def test_edit_that_only_changes_line_endings_is_refused() -> None:
    with pytest.raises(InvalidInput, match="would not change the file"):
        replace("a\nb\n", "a\r\nb", "a\nb")


# --- trailing whitespace ----------------------------------------------------------


def test_file_has_trailing_whitespace_old_does_not() -> None:
    content = "def f():  \n    return 1\t\n\nx = 2\n"
    result = replace(content, "def f():\n    return 1\n", "def f():\n    return 2\n")
    # The line the model left unchanged keeps the file's exact text.
    assert result == Replacement("def f():  \n    return 2\n\nx = 2\n", "trailing_whitespace", 1, 1)


def test_markdown_hard_breaks_survive_an_edit_of_a_neighbouring_line() -> None:
    content = "Roses are red,  \nViolets are blue,  \nSugar is sweet.\n"
    old = "Roses are red,\nViolets are blue,\nSugar is sweet."
    new = "Roses are red,\nViolets are blue,\nHoney is sweeter."
    result = replace(content, old, new)
    assert result.content == "Roses are red,  \nViolets are blue,  \nHoney is sweeter.\n"


def test_old_has_trailing_whitespace_file_does_not() -> None:
    content = "a = 1\nb = 2\nc = 3\n"
    result = replace(content, "a = 1   \nb = 2 ", "a = 10\nb = 20")
    assert result.content == "a = 10\nb = 20\nc = 3\n"
    assert result.strategy == "trailing_whitespace"


def test_trailing_whitespace_with_crlf() -> None:
    content = "k = 1  \r\nv = 2\r\nrest\r\n"
    result = replace(content, "k = 1\nv = 2\n", "k = 3\nv = 4\n")
    assert result.content == "k = 3\r\nv = 4\r\nrest\r\n"
    assert result.strategy == "trailing_whitespace"


def test_trailing_whitespace_ambiguity_is_a_conflict() -> None:
    content = "a = 1 \nb = 2\nc\na = 1\t\nb = 2\n"
    with pytest.raises(Conflict) as info:
        replace(content, "a = 1\nb = 2 ", "z")
    assert "ignoring trailing whitespace" in info.value.message
    assert "lines 1-2, 4-5" in info.value.message


def test_trailing_whitespace_replace_all() -> None:
    content = "a = 1 \nb\na = 1  \nc\n"
    result = replace(content, "a = 1\n", "a = 2\n", replace_all=True)
    assert result == Replacement("a = 2\nb\na = 2\nc\n", "trailing_whitespace", 2, 1)


def test_closer_strategy_wins_over_looser_one() -> None:
    # Lines 1-2 differ from old_string only in trailing spaces; lines 4-5 only in
    # indentation. The chain takes the closer (trailing whitespace) match.
    content = "x = 1 \ny = 2\n--\n    x = 1\n    y = 2\n"
    result = replace(content, "x = 1\ny = 2", "z = 3")
    assert result.content == "z = 3\n--\n    x = 1\n    y = 2\n"
    assert result.strategy == "trailing_whitespace"


# --- escapes ----------------------------------------------------------------------


def test_literal_newline_escapes_in_both_strings() -> None:
    content = "def f():\n    return 1\n"
    result = replace(content, "def f():\\n    return 1", "def f():\\n    return 2")
    assert result == Replacement("def f():\n    return 2\n", "escapes", 1, 1)


def test_tab_and_quote_escapes() -> None:
    content = "x = {\n\t\"key\": 'v',\n}\n"
    result = replace(content, "\\t\\\"key\\\": \\'v\\',", "\\t\\\"key\\\": \\'w\\',")
    assert result.content == "x = {\n\t\"key\": 'w',\n}\n"
    assert result.strategy == "escapes"


def test_double_backslash_escape() -> None:
    content = 'path = "C:\\\\dir"\nnext\n'  # the file holds C:\\dir (two backslashes)
    # The model doubled every backslash: C:\\\\dir, plus a literal \n.
    result = replace(content, 'path = "C:\\\\\\\\dir"\\nnext', 'path = "D:\\\\\\\\dir"\\nnext')
    assert result.content == 'path = "D:\\\\dir"\nnext\n'
    assert result.strategy == "escapes"


def test_escapes_not_used_when_the_file_really_has_backslashes() -> None:
    content = 'print("a\\nb")\n'  # source code containing the two characters \ and n
    result = replace(content, 'print("a\\nb")', 'print("a\\tb")')
    assert result == Replacement('print("a\\tb")\n', "exact", 1, 1)


def test_escapes_ambiguity_is_a_conflict() -> None:
    content = "a\nb\nc\na\nb\n"
    with pytest.raises(Conflict) as info:
        replace(content, "a\\nb", "x")
    assert "escape sequences" in info.value.message
    assert info.value.details["strategy"] == "escapes"


def test_escapes_combined_with_indentation() -> None:
    content = "class A:\n    def f(self):\n        return 1\n"
    result = replace(content, "def f(self):\\n    return 1", "def f(self):\\n    return 2")
    assert result.content == "class A:\n    def f(self):\n        return 2\n"
    assert result.strategy == "escapes"


# --- blank lines ------------------------------------------------------------------


def test_leading_and_trailing_blank_lines_the_file_lacks() -> None:
    content = "import os\ndef f():\n    pass\nx = 1\n"
    result = replace(content, "\n\ndef f():\n    pass\n\n", "\n\ndef g():\n    pass\n\n")
    assert result == Replacement("import os\ndef g():\n    pass\nx = 1\n", "blank_lines", 1, 2)


def test_blank_lines_new_string_without_them_adds_none() -> None:
    content = "a\nb\nc\n"
    result = replace(content, "\nb\n\n", "B\n")
    assert result.content == "a\nB\nc\n"
    assert result.strategy == "blank_lines"


def test_blank_lines_never_join_the_next_line() -> None:
    # old_string ends "\n\n" (a phantom blank line), new_string ends without a break:
    # the line after the match stays on its own line.
    result = replace("x\nfoo\nnext\n", "\nfoo\n\n", "bar")
    assert result == Replacement("x\nbar\nnext\n", "blank_lines", 1, 2)


def test_blank_lines_ambiguity_is_a_conflict() -> None:
    content = "x\ntarget\ny\ntarget\n"
    with pytest.raises(Conflict) as info:
        replace(content, "\n\ntarget\n\n", "t")
    assert "blank lines" in info.value.message
    assert "lines 2, 4" in info.value.message


def test_blank_line_in_the_middle_is_not_tolerated() -> None:
    content = "a = 1\nb = 2\n"
    with pytest.raises(NotFound):
        replace(content, "a = 1\n\nb = 2\n", "c\n")


def test_whitespace_only_old_string_not_found() -> None:
    with pytest.raises(NotFound, match="only whitespace"):
        replace("a\nb\n", "\n\n\n", "x")
