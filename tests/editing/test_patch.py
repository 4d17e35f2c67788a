"""The V4A patch parser and the pure-string hunk applier."""

from __future__ import annotations

import pytest

from local_tools.core.errors import Conflict, InvalidInput, NotFound
from local_tools.editing.patch import (
    AddFile,
    DeleteFile,
    Hunk,
    UpdateFile,
    apply_hunks,
    apply_hunks_with_report,
    parse_patch,
)

FULL = """*** Begin Patch
*** Add File: path/new.py
+import os
+
+print(os.getcwd())
*** Update File: path/old.py
*** Move to: path/renamed.py
@@ class Greeter:
@@     def greet(self):
     name = "x"
-    print("hi")
+    print("hello")
@@
-last
+LAST
*** End of File
*** Delete File: path/gone.py
*** End Patch
"""


def hunks(body: str) -> tuple[Hunk, ...]:
    """The hunks of a one-file patch whose Update section body is `body`."""
    op = parse_patch(f"*** Begin Patch\n*** Update File: f\n{body}*** End Patch").ops[0]
    assert isinstance(op, UpdateFile)
    return op.hunks


# ----------------------------------------------------------------------------- parser


def test_parses_every_section() -> None:
    ops = parse_patch(FULL).ops
    assert ops[0] == AddFile("path/new.py", "import os\n\nprint(os.getcwd())\n", line=2)
    assert ops[2] == DeleteFile("path/gone.py", line=17)
    update = ops[1]
    assert isinstance(update, UpdateFile)
    assert (update.path, update.move_to, update.line) == ("path/old.py", "path/renamed.py", 6)
    first, second = update.hunks
    assert first.headers == ("class Greeter:", "def greet(self):")
    assert first.lines == (
        (" ", '    name = "x"'),
        ("-", '    print("hi")'),
        ("+", '    print("hello")'),
    )
    assert first.old == ['    name = "x"', '    print("hi")']
    assert first.new == ['    name = "x"', '    print("hello")']
    assert (first.line, first.end_of_file) == (8, False)
    assert (second.headers, second.end_of_file, second.line) == ((), True, 13)


def test_missing_end_patch_is_accepted() -> None:
    ops = parse_patch("*** Begin Patch\n*** Delete File: a.txt\n").ops
    assert ops == (DeleteFile("a.txt", line=2),)


@pytest.mark.parametrize(
    "wrapped",
    [
        "```diff\n{p}\n```",
        "```\n{p}\n```\n",
        "apply_patch <<'EOF'\n{p}\nEOF\n",
        '<<"PATCH"\n{p}\nPATCH',
        "```bash\napply_patch <<EOF\n{p}\nEOF\n```",
        "\n\n  {p}  \n\n",
    ],
)
def test_wrappers_are_removed(wrapped: str) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    (op,) = parse_patch(wrapped.format(p=patch)).ops
    assert isinstance(op, AddFile)
    assert (op.path, op.content) == ("a.txt", "hi\n")


def test_crlf_patch_and_padded_markers() -> None:
    text = (
        "  *** Begin Patch  \r\n"
        "*** Update File:   a.txt  \r\n"
        "@@\r\n"
        "-old\r\n"
        "+new\r\n"
        " *** End Patch \r\n"
    )
    (op,) = parse_patch(text).ops
    assert isinstance(op, UpdateFile)
    assert op.path == "a.txt"
    assert op.hunks[0].lines == (("-", "old"), ("+", "new"))


def test_first_hunk_may_omit_header_and_unified_numbers_are_ignored() -> None:
    (plain,) = hunks(" import os\n+import sys\n")
    assert plain.headers == () and plain.lines == ((" ", "import os"), ("+", "import sys"))
    (numbered,) = hunks("@@ -3,4 +3,5 @@ def main():\n-a\n+b\n")
    assert numbered.headers == ("def main():",)
    (bare_numbers,) = hunks("@@ -1 +1 @@\n-a\n+b\n")
    assert bare_numbers.headers == ()


def test_blank_lines_inside_and_between_hunks() -> None:
    first, second = hunks("@@\n a\n\n-b\n+c\n\n\n@@ x\n-d\n\n")
    # The empty line inside the hunk is a blank context line ...
    assert first.lines == ((" ", "a"), (" ", ""), ("-", "b"), ("+", "c"))
    # ... while empty lines before the next '@@' or section are only spacing.
    assert second.lines == (("-", "d"),)


def test_blank_lines_before_the_first_hunk_are_spacing() -> None:
    (hunk,) = hunks("\n  \n@@ f\n-a\n+b\n")
    assert (hunk.headers, hunk.lines) == (("f",), (("-", "a"), ("+", "b")))
    (op,) = parse_patch("*** Begin Patch\n*** Update File: a\n*** Move to: b\n\n").ops
    assert op == UpdateFile("a", (), "b", line=2)


def test_line_numbers_count_wrapper_lines() -> None:
    (op,) = parse_patch("```diff\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n```").ops
    assert op.line == 3
    with pytest.raises(InvalidInput) as info:
        parse_patch("<<'EOF'\n*** Begin Patch\n*** Update File: a\n@@\n?x\nEOF")
    assert "line 5:" in info.value.message


def test_add_file_edge_cases() -> None:
    ops = parse_patch(
        "*** Begin Patch\n*** Add File: empty.txt\n*** Add File: gap.txt\n+a\n\n+b\n\n"
        "*** Add File: emoji.txt\n+héllo 🌍\n*** End Patch"
    ).ops
    assert ops == (
        AddFile("empty.txt", "", line=2),
        AddFile("gap.txt", "a\n\nb\n", line=3),
        AddFile("emoji.txt", "héllo 🌍\n", line=8),
    )


def test_move_to_itself_is_a_plain_update_and_pure_move_is_allowed() -> None:
    ops = parse_patch(
        "*** Begin Patch\n*** Update File: a\n*** Move to: a\n@@\n-x\n+y\n"
        "*** Update File: b\n*** Move to: c\n*** End Patch"
    ).ops
    assert isinstance(ops[0], UpdateFile) and ops[0].move_to is None
    assert ops[1] == UpdateFile("b", (), "c", line=7)


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("", None, "empty"),
        ("hello world\nthis is not a patch", 1, "*** Begin Patch"),
        ("*** Update File: a.py\n@@\n-x\n+y\n*** End Patch", 1, "*** Begin Patch"),
        ("*** Begin Patch\n*** End Patch", 1, "no file sections"),
        ("*** Begin Patch\n*** Update File: a.py\n@@\n-x\n>y\n*** End Patch", 5, "'>y'"),
        ("*** Begin Patch\n*** Update File: a.py\n@@\n\tx = 1\n", 4, "starts with ' '"),
        ("*** Begin Patch\n*** Update File: a.py\n*** End Patch", 2, "no hunks"),
        ("*** Begin Patch\n*** Update File: a.py\n@@ f\n*** End Patch", 3, "no lines"),
        ("*** Begin Patch\n*** Frobnicate File: a.py\n", 2, "'*** Add File: <path>'"),
        ("*** Begin Patch\n*** Delete File: a\n-x\n", 3, "outside an '*** Update File"),
        ("*** Begin Patch\n*** Add File: a\n+x\ny\n", 4, "must start with '+'"),
        ("*** Begin Patch\n*** Add File:   \n+x\n", 2, "needs a path"),
        ("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n", 5, "right after"),
        ("*** Begin Patch\n*** Update File: a\n*** End of File\n", 3, "must follow"),
        ("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n+y\n", 6, "after"),
        ("*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n", 4, "after"),
    ],
)
def test_invalid_patches_name_the_line(text: str, line: int | None, says: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_patch(text)
    message = info.value.message
    assert says in message
    if line is not None:
        assert f"line {line}:" in message
        assert info.value.details["line"] == line


# ----------------------------------------------------------------------------- applier

TWO = "def f():\n    x = 1\n    return x\n\n\ndef g():\n    x = 1\n    return x\n"


def test_single_hunk() -> None:
    body = "@@\n def f():\n-    x = 1\n+    x = 2\n     return x\n"
    assert apply_hunks(TWO, hunks(body)) == TWO.replace("x = 1", "x = 2", 1)


def test_several_hunks_each_after_the_previous() -> None:
    # Alone, "x = 1" is ambiguous; as the second of two identical hunks it is searched
    # below the first, so each hunk takes the next place.
    with pytest.raises(Conflict):
        apply_hunks(TWO, hunks("@@\n-    x = 1\n+    x = 10\n"))
    body = "@@\n def f():\n-    x = 1\n+    x = 10\n@@\n-    x = 1\n+    x = 20\n"
    out, report = apply_hunks_with_report(TWO, hunks(body))
    assert out == "def f():\n    x = 10\n    return x\n\n\ndef g():\n    x = 20\n    return x\n"
    assert [m.line for m in report] == [1, 7]


def test_several_hunks_with_headers() -> None:
    body = (
        "@@ def f():\n-    return x\n+    return x + 1\n"
        "@@ def g():\n     x = 1\n-    return x\n+    return x + 2\n"
    )
    assert apply_hunks(TWO, hunks(body)) == TWO.replace("return x", "return x + 1", 1).replace(
        "    return x\n", "    return x + 2\n"
    )


def test_header_breaks_a_tie_only_inside_its_block() -> None:
    # "x = 1" is below "def f():" twice (in f and in g); the header's block is f.
    out = apply_hunks(TWO, hunks("@@ def f():\n-    x = 1\n+    x = 2\n"))
    assert out == TWO.replace("x = 1", "x = 2", 1)
    # Two places inside the header's block stay a conflict.
    text = "def f():\n    a\n    a\ndef g():\n    a\n"
    with pytest.raises(Conflict) as info:
        apply_hunks(text, hunks("@@ def f():\n-    a\n+    b\n"))
    assert info.value.details["lines"] == [2, 3, 5]


def test_header_picks_the_place() -> None:
    out = apply_hunks(TWO, hunks("@@ def g():\n-    x = 1\n+    x = 2\n"))
    assert out == "def f():\n    x = 1\n    return x\n\n\ndef g():\n    x = 2\n    return x\n"


def test_header_prefix_and_chained_headers() -> None:
    text = "class A:\n    def run(self):\n        pass\n"
    text += "class B:\n    def run(self):\n        pass\n"
    out = apply_hunks(text, hunks("@@ class B\n@@ def run\n-        pass\n+        return 1\n"))
    assert out == text[: text.rindex("pass")] + "return 1\n"


def test_hunk_may_start_with_its_header_line() -> None:
    out = apply_hunks(TWO, hunks("@@ def g():\n def g():\n-    x = 1\n+    x = 3\n"))
    assert out == TWO[: TWO.index("def g")] + "def g():\n    x = 3\n    return x\n"


def test_pure_additions() -> None:
    below_header = apply_hunks("a\nb\nc\n", hunks("@@ a\n+inserted\n"))
    assert below_header == "a\ninserted\nb\nc\n"
    at_end = apply_hunks("a\nb\n", hunks("@@\n+z\n"))
    assert at_end == "a\nb\nz\n"
    into_empty = apply_hunks("", hunks("+first\n+second\n"))
    assert into_empty == "first\nsecond\n"


def test_end_of_file_anchor() -> None:
    text = "x\nend\nmiddle\nx\nend\n"
    assert apply_hunks(text, hunks("@@\n x\n-end\n+END\n*** End of File\n")) == (
        "x\nend\nmiddle\nx\nEND\n"
    )
    with pytest.raises(NotFound):
        apply_hunks(text, hunks("@@\n-middle\n+M\n*** End of File\n"))
    # Blank lines after the anchored block don't move the end of the file.
    assert apply_hunks("a\nb\n\n\n", hunks("@@\n-b\n+c\n*** End of File\n")) == "a\nc\n\n\n"


def test_ambiguous_hunk_is_a_conflict_naming_lines() -> None:
    with pytest.raises(Conflict) as info:
        apply_hunks(TWO, hunks("@@\n-    return x\n+    return -x\n"), path="m.py")
    message = info.value.message
    assert "Hunk 1 of m.py" in message
    assert "2 places" in message and "lines 3, 8" in message
    assert info.value.details["lines"] == [3, 8]


def test_not_found_shows_hunk_and_closest_region() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 40)) + "def g():\n    return 2\n"
    with pytest.raises(NotFound) as info:
        apply_hunks(text, hunks("@@\n def g():\n-    return 7\n+    return 8\n"), path="m.py")
    message = info.value.message
    assert "Hunk 1 of m.py (patch line 3)" in message
    assert "  |     return 7" in message
    assert "at line 40" in message and "     40 | def g():" in message
    assert "     41 |     return 2" in message
    assert info.value.details["closest_line"] == 40


def test_not_found_for_a_hunk_above_the_previous_one() -> None:
    body = "@@ def g():\n-    return x\n+    return 2\n@@\n-def f():\n+def ff():\n"
    with pytest.raises(NotFound) as info:
        apply_hunks(TWO, hunks(body))
    assert "Hunk 2" in info.value.message
    assert "hunks must be in file order" in info.value.message


def test_header_not_found() -> None:
    with pytest.raises(NotFound) as info:
        apply_hunks(TWO, hunks("@@ def h():\n-    x = 1\n+    x = 2\n"))
    assert "'def h():'" in info.value.message and "closest line" in info.value.message


def test_whitespace_levels_and_context_keeps_file_text() -> None:
    text = "a   \n  b\nc\n"
    out, report = apply_hunks_with_report(text, hunks("@@\n a\n-  b\n+  B\n"))
    assert out == "a   \n  B\nc\n"  # the context line keeps its trailing spaces
    assert report[0].strategy == "trailing_whitespace"
    out, report = apply_hunks_with_report(text, hunks("@@\n a\n-b\n+B\n"))
    assert out == "a   \nB\nc\n"
    assert report[0].strategy == "whitespace"
    assert (report[0].line, report[0].removed, report[0].added) == (1, 1, 1)


def test_exact_match_wins_over_looser_ambiguity() -> None:
    text = "  x\nx\n"
    assert apply_hunks(text, hunks("@@\n-x\n+y\n")) == "  x\ny\n"


def test_crlf_and_mixed_line_endings_are_kept() -> None:
    crlf = "a\r\nb\r\nc\r\n"
    assert apply_hunks(crlf, hunks("@@\n a\n-b\n+B\n+B2\n")) == "a\r\nB\r\nB2\r\nc\r\n"
    mixed = "a\r\nb\nc\r\nd\r\n"  # mostly CRLF: untouched lines keep their own ending
    assert apply_hunks(mixed, hunks("@@\n-c\n+C\n")) == "a\r\nb\nC\r\nd\r\n"


def test_missing_final_newline_is_kept() -> None:
    assert apply_hunks("a\nb", hunks("@@\n-b\n+B\n")) == "a\nB"
    assert apply_hunks("a\nb", hunks("@@\n+c\n*** End of File\n")) == "a\nb\nc"
    assert apply_hunks("a\nb", hunks("@@\n a\n-b\n")) == "a"


def test_trailing_blank_context_the_file_lacks_is_dropped() -> None:
    assert apply_hunks("a\nb", hunks("@@\n a\n-b\n+c\n \n")) == "a\nc"
    assert apply_hunks("a\nb\n", hunks("@@\n a\n-b\n+c\n    \n \n")) == "a\nc\n"


def test_unicode_and_emoji() -> None:
    text = "naïve = '🌍'\nπ = 3.14\n"
    assert apply_hunks(text, hunks("@@\n-π = 3.14\n+π = 3.14159  # 🥧\n")) == (
        "naïve = '🌍'\nπ = 3.14159  # 🥧\n"
    )
