"""Indentation deltas: how old_string's indentation is off from the file's, if consistently.

The INDENTATION strategy accepts a block only when one rule explains every
non-blank line's indentation difference; the same rule then re-indents
new_string, so the file keeps its style (tabs stay tabs) and every line keeps its
indentation relative to the others.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

__all__ = ["Reindent", "indent_map", "is_blank", "leading_ws"]

Reindent = Callable[[str], str]


def is_blank(line: str) -> bool:
    return not line.strip()


def leading_ws(line: str) -> str:
    """The line's leading whitespace."""
    return line[: len(line) - len(line.lstrip())]


def _split_lead(line: str) -> tuple[str, str]:
    lead = leading_ws(line)
    return lead, line[len(lead) :]


def indent_map(
    pairs: list[tuple[str, str]], file_lines: list[str], old_lines: Sequence[str]
) -> Reindent | None:
    """How new_string must be re-indented, if old_string's indentation is consistently off.

    `pairs` holds (file indentation, old_string indentation) for every non-blank line.
    """
    f0, o0 = pairs[0]
    if len(f0) > len(o0):
        delta = f0[: len(f0) - len(o0)]
        if all(f == delta + o for f, o in pairs):
            return lambda line: line if is_blank(line) else delta + line
        delta = f0[len(o0) :]
        if all(f == o + delta for f, o in pairs):
            return lambda line: line if is_blank(line) else _insert_after_lead(line, delta)
    if len(o0) > len(f0):
        delta = o0[: len(o0) - len(f0)]
        if all(o == delta + f for f, o in pairs):
            return lambda line: _remove_prefix(line, delta)
        delta = o0[len(f0) :]
        if all(o == f + delta for f, o in pairs):
            return lambda line: _remove_suffix(line, delta)
    return _width_map(pairs, file_lines, old_lines)


def _insert_after_lead(line: str, delta: str) -> str:
    lead, rest = _split_lead(line)
    return lead + delta + rest


def _remove_prefix(line: str, delta: str) -> str:
    # A new_string line indented less than the removed delta keeps what it has
    # beyond the common part, rather than being cut into its text.
    lead, rest = _split_lead(line)
    cut = _common_prefix(lead, delta)
    return lead[cut:] + rest


def _remove_suffix(line: str, delta: str) -> str:
    lead, rest = _split_lead(line)
    cut = _common_prefix(lead[::-1], delta[::-1])
    return lead[: len(lead) - cut] + rest


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


_SMART_LEAD = re.compile(r"\t* *")  # tabs, then spaces: the only layouts given widths


def _width_map(
    pairs: list[tuple[str, str]], file_lines: list[str], old_lines: Sequence[str]
) -> Reindent | None:
    """Tabs and spaces mixed up: one tab width makes every line's width off by one shift.

    With W columns per tab, file width = old width + shift must hold for every
    non-blank line, i.e. W*(file tabs - old tabs) + (file spaces - old spaces) is
    the same number for all of them.
    """
    if not all(_SMART_LEAD.fullmatch(f) and _SMART_LEAD.fullmatch(o) for f, o in pairs):
        return None
    diffs = {(f.count("\t") - o.count("\t"), f.count(" ") - o.count(" ")) for f, o in pairs}
    if len(diffs) == 1:
        ((tabs, spaces),) = diffs
        if tabs and spaces and -spaces % tabs == 0 and 1 <= -spaces // tabs <= 8:
            width = -spaces // tabs  # each tab was written as `width` spaces, nothing more
        else:
            width = _guess_width([*file_lines, *old_lines])
    else:
        (t0, s0), (t1, s1) = sorted(diffs)[:2]
        if t0 == t1:
            return None  # same tab difference, different space difference: no width fits
        width, rest = divmod(s0 - s1, t1 - t0)
        if rest or not 1 <= width <= 8:
            return None
    shifts = {width * tabs + spaces for tabs, spaces in diffs}
    if len(shifts) != 1:
        return None
    (shift,) = shifts
    use_tabs = any("\t" in f for f, _ in pairs)
    return lambda line: _reindent_width(line, width, shift, use_tabs)


def _guess_width(lines: Sequence[str]) -> int:
    """A tab width from the space-indented lines' own steps (4 if they say nothing)."""
    widths = {
        len(leading_ws(line))
        for line in lines
        if not is_blank(line) and "\t" not in leading_ws(line)
    }
    step = 0
    for w in widths:
        step = math.gcd(step, w - min(widths))
    return step if 2 <= step <= 8 else 4


def _reindent_width(line: str, width: int, shift: int, use_tabs: bool) -> str:
    if is_blank(line):
        return line
    lead, rest = _split_lead(line)
    columns = max(0, width * lead.count("\t") + lead.count(" ") + shift)
    if not use_tabs:
        return " " * columns + rest
    tabs, spaces = divmod(columns, width)
    return "\t" * tabs + " " * spaces + rest
