"""unified_diff(): what the edit tools show after a change."""

from __future__ import annotations

from local_tools.editing.diff import format_hunks, unified_diff
from local_tools.editing.match import replace


def test_equal_texts_give_empty_diff() -> None:
    assert unified_diff("a\nb\n", "a\nb\n", "f.py") == ""
    assert unified_diff("", "", "f.py") == ""


def test_single_change_with_context() -> None:
    old = "".join(f"{i}\n" for i in range(1, 11))
    new = old.replace("5\n", "five\n")
    assert unified_diff(old, new, "src/n.txt") == (
        "--- a/src/n.txt\n+++ b/src/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
    )


def test_context_parameter() -> None:
    old = "a\nb\nc\nd\ne\n"
    new = "a\nb\nC\nd\ne\n"
    assert unified_diff(old, new, "f", context=0) == "--- a/f\n+++ b/f\n@@ -3 +3 @@\n-c\n+C\n"
    assert unified_diff(old, new, "f", context=1) == (
        "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"
    )


def test_separate_changes_give_separate_hunks() -> None:
    old = "".join(f"line{i}\n" for i in range(20))
    new = old.replace("line2\n", "LINE2\n").replace("line17\n", "LINE17\n")
    diff = unified_diff(old, new, "f", context=1)
    assert diff == (
        "--- a/f\n+++ b/f\n"
        "@@ -2,3 +2,3 @@\n line1\n-line2\n+LINE2\n line3\n"
        "@@ -17,3 +17,3 @@\n line16\n-line17\n+LINE17\n line18\n"
    )


def test_crlf_files_show_no_carriage_returns() -> None:
    old = "a\r\nb\r\nc\r\n"
    new = "a\r\nB\r\nc\r\n"
    diff = unified_diff(old, new, "w.txt")
    assert "\r" not in diff
    assert diff == "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def test_only_line_endings_changed_is_said_plainly() -> None:
    assert unified_diff("a\r\nb\r\n", "a\nb\n", "f") == (
        "--- a/f\n+++ b/f\n(only line endings differ)\n"
    )


def test_missing_final_newline_is_marked() -> None:
    assert unified_diff("a\nb", "a\nc", "f") == (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+c\n\\ No newline at end of file\n"
    )
    assert unified_diff("a\nb", "a\nb\n", "f") == (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    )


def test_new_file_and_emptied_file() -> None:
    assert unified_diff("", "x\ny\n", "new.txt") == (
        "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n"
    )
    assert (
        unified_diff("x\n", "", "gone.txt") == "--- a/gone.txt\n+++ b/gone.txt\n@@ -1 +0,0 @@\n-x\n"
    )


def test_unicode_lines() -> None:
    diff = unified_diff("héllo 👋\n", "héllo 🎉\n", "u.txt")
    assert diff.endswith("-héllo 👋\n+héllo 🎉\n")


def test_big_file_diff_has_real_line_numbers() -> None:
    old = "".join(f"row {i}\n" for i in range(100_000))
    result = replace(old, "row 73456\n", "row 73456 edited\n")
    diff = unified_diff(old, result.content, "big.txt", context=1)
    assert diff == (
        "--- a/big.txt\n+++ b/big.txt\n"
        "@@ -73456,3 +73456,3 @@\n row 73455\n-row 73456\n+row 73456 edited\n row 73457\n"
    )


def test_diff_of_an_edit_in_a_crlf_file() -> None:
    content = "x = 1\r\ny = 2\r\n"
    result = replace(content, "y = 2\n", "y = 3\nz = 4\n")
    assert unified_diff(content, result.content, "c.py") == (
        "--- a/c.py\n+++ b/c.py\n@@ -1,2 +1,3 @@\n x = 1\n-y = 2\n+y = 3\n+z = 4\n"
    )


def test_format_hunks_offsets_line_numbers() -> None:
    hunks = format_hunks(["a", "b"], ["a", "c"], a_start=1, b_start=40)
    assert hunks == ["@@ -1,2 +40,2 @@", " a", "-b", "+c"]
