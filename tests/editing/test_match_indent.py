"""replace(): the indentation strategy and how new_string is re-indented."""

from __future__ import annotations

import pytest

from local_tools.core.errors import Conflict, NotFound
from local_tools.editing.match import Replacement, replace

NESTED = (
    "class Service:\n"
    "    def run(self):\n"
    "        if self.ready:\n"
    "            self.start()\n"
    "\n"
    "            self.log('started')\n"
    "        return True\n"
)


def test_model_dropped_the_leading_eight_spaces() -> None:
    old = "if self.ready:\n    self.start()\n"
    new = "if self.ready:\n    self.prepare()\n    self.start()\nelse:\n    raise RuntimeError\n"
    result = replace(NESTED, old, new)
    assert result == Replacement(
        "class Service:\n"
        "    def run(self):\n"
        "        if self.ready:\n"
        "            self.prepare()\n"
        "            self.start()\n"
        "        else:\n"
        "            raise RuntimeError\n"
        "\n"
        "            self.log('started')\n"
        "        return True\n",
        "indentation",
        1,
        3,
    )


def test_model_added_extra_indentation() -> None:
    content = "def f():\n    x = 1\n    return x\n"
    old = "        x = 1\n        return x\n"
    new = "        x = 2\n        if x:\n            return x\n"
    result = replace(content, old, new)
    assert result.content == "def f():\n    x = 2\n    if x:\n        return x\n"
    assert result.strategy == "indentation"


def test_blank_lines_inside_the_block_stay_blank() -> None:
    old = "if self.ready:\n    self.start()\n\n    self.log('started')\n"
    new = "if self.ready:\n    self.go()\n\n    self.log('went')\n"
    result = replace(NESTED, old, new)
    assert (
        "        if self.ready:\n            self.go()\n\n            self.log('went')\n"
        in result.content
    )
    assert "\n            \n" not in result.content  # no whitespace-only line was invented


def test_tabs_file_spaces_old_keeps_tabs() -> None:
    content = "func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n"
    old = "    if ok {\n        run()\n    }\n"
    new = "    if ok {\n        run()\n        log()\n    } else {\n        stop()\n    }\n"
    result = replace(content, old, new)
    assert result.content == (
        "func main() {\n\tif ok {\n\t\trun()\n\t\tlog()\n\t} else {\n\t\tstop()\n\t}\n}\n"
    )
    assert result.strategy == "indentation"


def test_spaces_file_tabs_old_keeps_spaces() -> None:
    content = "def f():\n    if x:\n        y()\n"
    old = "\tif x:\n\t\ty()\n"
    new = "\tif x:\n\t\ty()\n\t\tz()\n"
    result = replace(content, old, new)
    assert result.content == "def f():\n    if x:\n        y()\n        z()\n"


def test_two_space_file_with_tab_old_uses_the_derived_width() -> None:
    content = "root:\n  child:\n    leaf: 1\n"
    old = "\tchild:\n\t\tleaf: 1\n"
    new = "\tchild:\n\t\tleaf: 2\n\t\tother:\n\t\t\tdeep: 3\n"
    result = replace(content, old, new)
    assert result.content == "root:\n  child:\n    leaf: 2\n    other:\n      deep: 3\n"


def test_single_level_tab_file_with_spaces_old() -> None:
    content = "x\n\tvalue = 1\ny\n"
    result = replace(content, "    value = 1\n", "    value = 2\n        nested = 3\n")
    assert result.content == "x\n\tvalue = 2\n\t\tnested = 3\ny\n"


def test_one_tab_among_spaces_in_old_is_read_at_the_consistent_width() -> None:
    content = "def f():\n    x = 1\n    y = 2\n    return x\n"
    old = "def f():\n    x = 1\n\ty = 2\n    return x\n"
    new = "def f():\n    x = 1\n\ty = 3\n    return x\n"
    assert replace(content, old, new).content == "def f():\n    x = 1\n    y = 3\n    return x\n"


def test_unchanged_lines_keep_the_files_exact_indentation() -> None:
    # Smart tabs: a tab for the level, spaces for alignment. The re-indenter would
    # render the continuation line as two tabs; as the model did not change that
    # line, the file's own text is kept.
    content = "func() {\n\tcall(a,\n\t     b)\n}\n"
    old = "    call(a,\n         b)\n"
    new = "    call(a,\n         b)\n    next()\n"
    result = replace(content, old, new)
    assert result.content == "func() {\n\tcall(a,\n\t     b)\n\tnext()\n}\n"
    assert result.strategy == "indentation"


def test_indentation_with_crlf_file() -> None:
    content = "class A:\r\n    def f(self):\r\n        return 1\r\n"
    old = "def f(self):\n    return 1\n"
    new = "def f(self):\n    return 2\n"
    result = replace(content, old, new)
    assert result.content == "class A:\r\n    def f(self):\r\n        return 2\r\n"
    assert result.strategy == "indentation"


def test_new_line_less_indented_than_the_removed_delta_keeps_its_text() -> None:
    content = "    a()\n    b()\n"
    old = "        a()\n        b()\n"
    new = "        a()\n  # note\n        b()\n"
    result = replace(content, old, new)
    assert result.content == "    a()\n# note\n    b()\n"


def test_indentation_and_unicode() -> None:
    content = "def greet():\n    print('héllo 👋')\n    return '✓'\n"
    result = replace(content, "print('héllo 👋')\nreturn '✓'", "print('hi 🎉')\nreturn '✔'")
    assert result.content == "def greet():\n    print('hi 🎉')\n    return '✔'\n"


def test_inconsistent_indentation_is_not_found() -> None:
    # Line 2 is shifted by 4 relative to the file, line 3 by 8: no single delta.
    content = "def f():\n    a = 1\n    b = 2\n"
    with pytest.raises(NotFound):
        replace(content, "def f():\n        a = 1\n            b = 2\n", "x")


def test_relative_indentation_must_be_preserved() -> None:
    # Same text, but old_string flattens the nesting: not the same code.
    content = "if a:\n    if b:\n        c()\n"
    with pytest.raises(NotFound):
        replace(content, "if a:\nif b:\nc()\n", "x\n")


def test_indentation_ambiguity_is_a_conflict() -> None:
    content = "def f():\n    run()\n    stop()\n\nclass A:\n        run()\n        stop()\n"
    with pytest.raises(Conflict) as info:
        replace(content, "  run()\n  stop()\n", "go()\n")
    assert "ignoring indentation" in info.value.message
    assert "lines 2-3, 6-7" in info.value.message


def test_indentation_replace_all_reindents_each_place_by_its_own_delta() -> None:
    content = "a:\n    key: 1\n    val: 2\nb:\n        key: 1\n        val: 2\n"
    result = replace(content, "key: 1\nval: 2\n", "key: 1\nval: 3\n", replace_all=True)
    assert result == Replacement(
        "a:\n    key: 1\n    val: 3\nb:\n        key: 1\n        val: 3\n", "indentation", 2, 2
    )


def test_replace_all_leaves_looser_matches_alone() -> None:
    # Two exact occurrences decide; the re-indented third only matches by indentation,
    # a looser strategy, and is left as it is (as an exact replace_all would).
    content = "a = 1\nb = 2\n--\na = 1\nb = 2\n--\n    a = 1\n    b = 2\n"
    result = replace(content, "a = 1\nb = 2\n", "a = 3\nb = 4\n", replace_all=True)
    assert result == Replacement(
        "a = 3\nb = 4\n--\na = 3\nb = 4\n--\n    a = 1\n    b = 2\n", "exact", 2, 1
    )


def test_replacement_syntax_literal_in_a_reindented_new_string() -> None:
    content = "def f():\n    return a\n"
    result = replace(content, "return a", "return re.sub(r'(x)', r'\\1$&\\g<0>', a)")
    assert result.content == "def f():\n    return re.sub(r'(x)', r'\\1$&\\g<0>', a)\n"
    content = "def f():\n    a = 1\n    return a\n"
    result = replace(content, "a = 1\nreturn a", "a = '$&'\nreturn '\\g<0>'")
    assert result.content == "def f():\n    a = '$&'\n    return '\\g<0>'\n"
    assert result.strategy == "indentation"
