"""Making an audit row storable when SQLite rejects it as it is.

Kept apart from ``audit`` (the buffered writer): these are pure value fixes, used only
on the rare batch that fails on one row's values, and by ``AuditLog.query`` to match
filter values the way they were stored.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

# Errors that one row's values cause (a str SQLite cannot store, a value of a type it
# does not take, NULL in a NOT NULL column): the other rows of the batch are still
# written. Anything else (disk full, locked, no table) fails the whole batch.
_ROW_ERRORS = (
    ValueError,  # UnicodeEncodeError: lone surrogates ("bad\udcff.txt" from os.scandir)
    TypeError,
    OverflowError,
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
    sqlite3.DataError,
)
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # the only code points UTF-8 cannot encode


def _text(value: Any) -> str:
    """``value`` as a str SQLite can store: what UTF-8 cannot encode is escaped."""
    if not isinstance(value, str):
        try:
            value = "" if value is None else str(value)
        except Exception:
            value = f"<unprintable {type(value).__name__}>"
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _number(value: Any) -> float:
    try:
        number = float(value)
    except Exception:
        return 0.0
    return number if number == number else 0.0  # NaN would be stored as NULL


def _escape_in_json(m: re.Match[str]) -> str:
    return f"\\\\u{ord(m.group()):04x}"  # JSON for a backslash, then "udcff"


def _sanitized(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """``row`` made storable; only used after inserting it as it is failed."""
    ts, call_id, user_id, tool, args, outcome, error_code, duration_ms, *rest = row
    workspace, transport, note = rest
    return (
        _number(ts),
        _text(call_id),
        _text(user_id),
        _text(tool),
        # Surrogates are only ever inside JSON strings: writing them as "\\udcff"
        # escapes the backslash, so the value reads back as the text "\udcff", the
        # way the other columns store it (not as the surrogate, which cannot be printed).
        _text(_SURROGATE.sub(_escape_in_json, args) if isinstance(args, str) else args),
        _text(outcome),
        None if error_code is None else _text(error_code),
        _number(duration_ms),
        _text(workspace),
        _text(transport),
        None if note is None else _text(note),
    )
