"""Output bounding with spill files, spill cleanup, and the default model rendering."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from local_tools.core.output import Bounded, bound_text, cleanup_spills, render_compact


@pytest.fixture
def spill(tmp_path: Path) -> Path:
    return tmp_path / "state" / "tool-output"


def numbered(n: int, eol: str = "\n") -> str:
    return "".join(f"line {i}{eol}" for i in range(1, n + 1))


def spill_path_in(hint: str) -> Path:
    m = re.search(r"Full output saved to (\S+)\. ", hint)
    assert m, hint
    return Path(m.group(1))


# --------------------------------------------------------------------------- limits


@pytest.mark.parametrize("text", ["", "one line", "a\nb\n", "ünïcødé ✓\n" * 3])
def test_within_limits_is_unchanged(text: str, spill: Path) -> None:
    got = bound_text(text, max_lines=10, max_bytes=1000, spill_dir=spill)
    assert got == Bounded(text, False, got.total_lines, len(text.encode()), None)
    assert got.text is text
    assert not spill.exists()  # nothing spilled, not even a directory


@pytest.mark.parametrize(
    ("text", "lines"), [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("\n\n", 2)]
)
def test_line_counting(text: str, lines: int) -> None:
    assert bound_text(text, max_lines=10, max_bytes=100, spill_dir=None).total_lines == lines


def test_exactly_at_both_limits_is_not_truncated() -> None:
    text = numbered(3)  # 3 lines, 21 bytes
    got = bound_text(text, max_lines=3, max_bytes=len(text), spill_dir=None)
    assert not got.truncated
    assert got.text == text


def test_over_line_limit_keeps_first_lines_and_spills(spill: Path) -> None:
    text = numbered(10)
    got = bound_text(text, max_lines=3, max_bytes=10_000, spill_dir=spill, name="exec_cmd")
    assert got.truncated
    assert (got.total_lines, got.total_bytes) == (10, len(text))
    preview, hint = got.text.split("\n\n", 1)
    assert preview + "\n" == "line 1\nline 2\nline 3\n"
    assert hint.startswith(f"... 7 more lines truncated ({len(text)} bytes total).")
    assert got.spill_path is not None
    assert spill_path_in(hint) == got.spill_path
    assert f"read_file path={got.spill_path} offset=4 limit=3" in hint
    assert "grep" in hint


def test_over_byte_limit_keeps_whole_lines_that_fit() -> None:
    text = numbered(10)  # "line N\n" is 7 bytes
    got = bound_text(text, max_lines=100, max_bytes=20, spill_dir=None)
    assert got.truncated
    assert got.text.startswith("line 1\nline 2\n\n...")
    assert "8 more lines truncated" in got.text


def test_preview_fits_both_limits(spill: Path) -> None:
    text = "".join(f"{'é' * (i % 37)} {i}\n" for i in range(500))
    got = bound_text(text, max_lines=50, max_bytes=700, spill_dir=spill)
    preview = got.text.split("\n\n... ", 1)[0] + "\n"
    assert text.startswith(preview)
    assert preview.count("\n") <= 50
    assert len(preview.encode()) <= 700
    next_line = text[len(preview) :].split("\n", 1)[0] + "\n"
    assert len((preview + next_line).encode()) > 700  # as many lines as fit


def test_hint_names_the_spill_file_which_holds_the_full_text(spill: Path) -> None:
    text = "ünïcødé ✓ 🚀\r\n" * 300 + "last line without newline"
    got = bound_text(text, max_lines=5, max_bytes=10_000, spill_dir=spill, name="grep-out")
    assert got.spill_path is not None
    assert got.spill_path.parent == spill
    assert str(got.spill_path) in got.text
    assert got.spill_path.read_bytes() == text.encode()
    assert re.fullmatch(r"\d{8}-\d{6}-grep-out-[0-9a-f]{8}\.txt", got.spill_path.name)


def test_each_spill_gets_its_own_file(spill: Path) -> None:
    a = bound_text("x\n" * 10, max_lines=1, max_bytes=100, spill_dir=spill)
    b = bound_text("y\n" * 10, max_lines=1, max_bytes=100, spill_dir=spill)
    assert a.spill_path != b.spill_path
    assert sorted(p.name for p in spill.iterdir()) == sorted(
        [a.spill_path.name, b.spill_path.name]  # type: ignore[union-attr]
    )


def test_spill_name_cannot_escape_the_dir(spill: Path) -> None:
    got = bound_text("z\n" * 10, max_lines=1, max_bytes=100, spill_dir=spill, name="../../x y")
    assert got.spill_path is not None
    assert got.spill_path.parent == spill
    assert "/" not in got.spill_path.name
    assert " " not in got.spill_path.name


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_spill_file_is_private(spill: Path) -> None:
    got = bound_text("s\n" * 10, max_lines=1, max_bytes=100, spill_dir=spill)
    assert got.spill_path is not None
    assert got.spill_path.stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- unicode, CRLF


@pytest.mark.parametrize("budget", range(1, 14))
def test_multibyte_chars_are_never_cut(budget: int) -> None:
    line = "aé€🚀" * 5  # 1, 2, 3 and 4 bytes per char, no newline
    got = bound_text(line, max_lines=10, max_bytes=budget, spill_dir=None)
    preview = got.text.split("\n\n... ", 1)[0] if not got.text.startswith("...") else ""
    assert line.startswith(preview)
    assert len(preview.encode()) <= budget
    assert len(line[: len(preview) + 1].encode()) > budget  # longest prefix that fits


def test_crlf_counts_as_one_line_end_and_is_kept_in_the_preview() -> None:
    text = numbered(5, eol="\r\n")
    assert bound_text(text, max_lines=5, max_bytes=1000, spill_dir=None).total_lines == 5
    got = bound_text(text, max_lines=2, max_bytes=1000, spill_dir=None)
    assert got.total_lines == 5
    assert got.text.startswith("line 1\r\nline 2\r\n\n... 3 more lines truncated")


def test_lone_carriage_returns_do_not_split_lines() -> None:
    progress = "\r".join(f"{p}%" for p in range(0, 101, 10)) + "\n"
    assert bound_text(progress, max_lines=1, max_bytes=1000, spill_dir=None).total_lines == 1


def test_single_huge_line_is_cut(spill: Path) -> None:
    text = "x" * 100_000
    got = bound_text(text, max_lines=2000, max_bytes=1000, spill_dir=spill)
    preview, hint = got.text.split("\n\n", 1)
    assert preview == "x" * 1000
    assert hint.startswith("... 1 more lines truncated (100000 bytes total; line 1 is cut short)")
    assert "offset=1 " in hint
    assert got.spill_path is not None
    assert got.spill_path.read_text() == text


# --------------------------------------------------------------------------- tail, no spill


def test_tail_keeps_last_lines_with_the_hint_first(spill: Path) -> None:
    text = numbered(10)
    got = bound_text(text, max_lines=3, max_bytes=1000, spill_dir=spill, direction="tail")
    hint, preview = got.text.split("\n\n", 1)
    assert preview == "line 8\nline 9\nline 10\n"
    assert hint.startswith("... 7 earlier lines truncated")
    assert "showing lines 8-10" in hint
    assert f"read_file path={got.spill_path} offset=1 limit=3" in hint
    assert got.spill_path is not None
    assert got.spill_path.read_text() == text


def test_tail_without_final_newline_and_by_bytes() -> None:
    text = "aaaa\nbbbb\ncccc\ndddd"
    got = bound_text(text, max_lines=100, max_bytes=10, spill_dir=None, direction="tail")
    assert got.text.endswith("\n\ncccc\ndddd")
    assert "2 earlier lines truncated" in got.text


def test_tail_of_a_huge_line_keeps_its_end() -> None:
    text = "start" + "é" * 1000 + "THE END"
    got = bound_text(text, max_lines=10, max_bytes=20, spill_dir=None, direction="tail")
    preview = got.text.split("\n\n", 1)[1]
    assert preview.endswith("THE END")
    assert text.endswith(preview)
    assert len(preview.encode()) <= 20
    assert "line 1 is cut short" in got.text


def test_no_spill_dir_says_output_was_not_saved() -> None:
    got = bound_text(numbered(10), max_lines=2, max_bytes=1000, spill_dir=None)
    assert got.truncated
    assert got.spill_path is None
    assert "not saved" in got.text
    assert "read_file" not in got.text


def test_spill_failure_is_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    got = bound_text(numbered(10), max_lines=2, max_bytes=1000, spill_dir=blocker / "spill")
    assert got.truncated
    assert got.spill_path is None
    assert "not saved" in got.text


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        bound_text("x", max_lines=0, max_bytes=10, spill_dir=None)


# --------------------------------------------------------------------------- cleanup


def test_cleanup_removes_only_old_spill_files(spill: Path) -> None:
    spill.mkdir(parents=True)
    old, new, other = spill / "old.txt", spill / "new.txt", spill / "keep.log"
    subdir = spill / "dir.txt"
    subdir.mkdir()
    for p in (old, new, other):
        p.write_text("x")
    eight_days_ago = time.time() - 8 * 86400
    for p in (old, other, subdir):
        os.utime(p, (eight_days_ago, eight_days_ago))
    assert cleanup_spills(spill) == 1
    assert sorted(p.name for p in spill.iterdir()) == ["dir.txt", "keep.log", "new.txt"]
    assert cleanup_spills(spill, max_age_days=0) == 1  # now "new.txt" is old enough
    assert not new.exists()


def test_cleanup_of_a_missing_dir_is_zero(tmp_path: Path) -> None:
    assert cleanup_spills(tmp_path / "nope") == 0


# --------------------------------------------------------------------------- rendering


def test_strings_render_as_is() -> None:
    text = 'def f():\n    return "x"\n'
    assert render_compact(text) is text


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "null"), (True, "true"), (3, "3"), (1.5, "1.5"), ([], "[]"), ({}, "{}")],
)
def test_scalars_and_empties_render_as_json(value: object, expected: str) -> None:
    assert render_compact(value) == expected


def test_small_dict_is_one_readable_json_line() -> None:
    out = render_compact({"path": "ünï/✓.txt", "bytes_written": 12, "created": True})
    assert out == '{"path": "ünï/✓.txt", "bytes_written": 12, "created": true}'


def test_multiline_text_fields_become_raw_sections() -> None:
    out = render_compact(
        {"exit_code": 1, "stdout": 'say "hi"\n\tdone\n', "stderr": "", "truncated": False}
    )
    assert out == (
        '{"exit_code": 1, "stderr": "", "truncated": false}\n--- stdout ---\nsay "hi"\n\tdone'
    )


def test_long_lists_render_one_item_per_line_and_stay_valid_json() -> None:
    items = [{"path": f"src/file_{i}.py", "line": i, "text": "TODO: fix"} for i in range(10)]
    out = render_compact(items)
    assert out.splitlines()[0] == "["
    assert out.splitlines()[1] == '  {"path": "src/file_0.py", "line": 0, "text": "TODO: fix"},'
    assert len(out.splitlines()) == 12
    assert json.loads(out) == items


def test_long_list_field_becomes_a_section() -> None:
    matches = [{"path": f"a{i}.py", "line": i, "text": "needle here"} for i in range(8)]
    out = render_compact({"matches": matches, "total": 8, "truncated": False})
    lines = out.splitlines()
    assert lines[0] == '{"total": 8, "truncated": false}'
    assert lines[1] == "--- matches (8 items) ---"
    assert [json.loads(line) for line in lines[2:]] == matches


def test_short_list_stays_inline() -> None:
    assert render_compact({"files": ["a.py", "b.py"], "truncated": False}) == (
        '{"files": ["a.py", "b.py"], "truncated": false}'
    )


def test_wide_dict_of_short_fields_is_one_field_per_line() -> None:
    value = {f"field_{i}": "v" * 30 for i in range(8)}
    out = render_compact(value)
    assert out.count("\n") == 9
    assert json.loads(out) == value


def test_other_objects_are_rendered_without_failing() -> None:
    @dataclass
    class Entry:
        name: str
        size: int

    assert render_compact(Entry("a.txt", 3)) == '{"name": "a.txt", "size": 3}'
    assert render_compact({"path": Path("a") / "b"}) == f'{{"path": "{Path("a") / "b"}"}}'
    assert render_compact(b"bytes \xff") == "bytes \ufffd"


def test_unencodable_values_fall_back_to_repr() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert render_compact(cyclic) == "[[...]]"
    assert render_compact({("a", 1): "tuple key"}) == "{('a', 1): 'tuple key'}"
