"""Values no tool can take, refused before validation: one cheap pass over raw arguments.

Whatever a tool does with its arguments ends at the OS, a subprocess, SQLite,
PostgreSQL or a codec, and each of those fails in its own way on a few values: a NUL
character ("embedded null byte", a C string cut short, a PostgreSQL text refused), a
lone surrogate (no encoding can write it: the UTF-8 of a path, a file, an MCP reply),
an integer beyond signed 64 bits (SQLite's OverflowError), a float that is not finite
(JSON has none; a deadline of NaN), nesting deeper than any schema needs (recursion in
pydantic, in the audit's redaction, in json). The runner calls `check_args` on every
call, after the alias renaming and before pydantic, so every tool, built-in or plugin,
gets INVALID_INPUT naming the parameter instead of an INTERNAL_ERROR from deep inside.

Text a tool passes on verbatim may carry NUL: an arguments model lists those parameters
in a ``verbatim_text`` class variable, as dotted paths with ``*`` for a list's items, e.g.
``verbatim_text: ClassVar[frozenset[str]] = frozenset({"content", "parts.*.body"})``.
The built-in ones: write_file's ``content``, process_input's ``input``, the memory
tools' ``content`` / ``value`` (SQLite stores a NUL; PostgreSQL refuses it with its own
INVALID_INPUT). Everything else (paths, patterns, commands, encodings, URLs, ids, names,
titles, edit strings: edit tools change text files only) refuses NUL.

Cost: a type test per value and, per string, a NUL test and (for non-ASCII text only)
one UTF-8 encode; about a microsecond for a small call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from local_tools.core.errors import InvalidInput

__all__ = ["MAX_DEPTH", "MAX_INT", "MIN_INT", "check_args", "verbatim_tree"]

MAX_DEPTH = 32  # levels of objects and lists below the arguments object
MAX_INT = 2**63 - 1  # what SQLite, PostgreSQL's bigint and a C long hold
MIN_INT = -(2**63)

# A verbatim tree: parameter -> True (this text may hold NUL) or a subtree for what it
# holds ("*" for a list's items).
_Tree = Mapping[str, Any]
_NONE: _Tree = {}


@functools.lru_cache(maxsize=1024)
def verbatim_tree(model: type) -> _Tree:
    """The model's ``verbatim_text`` paths as a tree, worked out once per model."""
    paths = getattr(model, "verbatim_text", None) or ()
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        *heads, last = str(path).split(".")
        for part in heads:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = True
    return tree


def check_args(model: type, args: Mapping[str, Any]) -> None:
    """Raise InvalidInput naming the first parameter whose value no tool can take."""
    problem = _mapping(args, verbatim_tree(model), 0)
    if problem is not None:
        parts, reason = problem
        where = ".".join(reversed(parts)) or "(arguments)"
        raise InvalidInput(f"'{where}' {reason}")


# A problem on its way out: the path's parts innermost first, and what is wrong.
_Problem = tuple[list[str], str]


def _mapping(value: Mapping[Any, Any], tree: _Tree, depth: int) -> _Problem | None:
    for key, item in value.items():
        # Inline fast paths for the common case (plain ASCII text without NUL): a
        # function call per value would double the cost of a small call.
        if type(key) is str and ("\x00" in key or not key.isascii()):
            bad = _text(key, False)
            if bad is not None:
                return [_shown_key(key)], f"is a parameter name that {bad}"
        sub = tree.get(key, _NONE) if tree else _NONE
        if type(item) is str and item.isascii() and (sub is True or "\x00" not in item):
            continue
        problem = _value(item, sub, depth)
        if problem is not None:
            problem[0].append(str(key))
            return problem
    return None


def _value(value: Any, tree: Any, depth: int) -> _Problem | None:
    kind = type(value)
    if kind is str:
        bad = _text(value, tree is True)
        return None if bad is None else ([], bad)
    if kind is int:
        if MIN_INT <= value <= MAX_INT:
            return None
        return [], (
            "is an integer beyond the signed 64-bit range "
            f"({MIN_INT}..{MAX_INT}); no parameter takes one that large."
        )
    if kind is float:
        if math.isfinite(value):
            return None
        return [], f"is {value!r}, which JSON cannot carry; give a finite number."
    if kind is bool or value is None:
        return None
    # dict and list by exact type first: an ABC isinstance test costs more than the rest.
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        if depth >= MAX_DEPTH:
            return [], _too_deep()
        return _mapping(value, tree if type(tree) is dict else _NONE, depth + 1)
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        if depth >= MAX_DEPTH:
            return [], _too_deep()
        items = tree.get("*", _NONE) if type(tree) is dict else _NONE
        for index, item in enumerate(value):
            problem = _value(item, items, depth + 1)
            if problem is not None:
                problem[0].append(str(index))
                return problem
        return None
    if isinstance(value, str):  # a str subclass: checked as its text
        bad = _text(str(value), tree is True)
        return None if bad is None else ([], bad)
    if isinstance(value, int) and not isinstance(value, bool):
        return _value(int(value), tree, depth)
    return None  # other Python objects: pydantic says what it thinks of them


def _text(text: str, nul_ok: bool) -> str | None:
    if not nul_ok and "\x00" in text:
        return (
            "contains a NUL character (\\x00), which no path, pattern, command, name or "
            "stored text can hold; remove it."
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"contains a lone surrogate (U+{ord(text[exc.start]):04X} at index "
                f"{exc.start}), which no encoding can write; send valid Unicode text."
            )
    return None


def _too_deep() -> str:
    return f"nests objects or lists deeper than {MAX_DEPTH} levels; no parameter needs that."


def _shown_key(key: str) -> str:
    """A bad key, printable: its escapes instead of the characters themselves."""
    return key.encode("unicode_escape", "backslashreplace").decode("ascii")[:60]
