"""Config validation errors as a person reads them: the key's path, what it must be,
the value given, and a "did you mean" for a misspelt key."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any, get_args, get_origin

from pydantic import BaseModel

__all__ = ["ACTION_TAG", "TABLE_TAG", "describe"]

# The tags of a permission value's two forms ("allow", or a table of pattern = action);
# left out of the key paths shown.
ACTION_TAG = "__action__"
TABLE_TAG = "__table__"

_TYPE_MESSAGES = {
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "finite_number": "must be a finite number",
    "path_type": "must be a path string",
}


def describe(err: Mapping[str, Any], root: type[BaseModel]) -> str:
    """One line for one validation error of the config whose model is `root`."""
    loc = [p for p in err["loc"] if p not in (ACTION_TAG, TABLE_TAG)]
    is_key = bool(loc) and loc[-1] == "[key]"
    if is_key:
        loc = loc[:-1]
    path = _key_path(loc)
    kind = err["type"]
    value = _short(err.get("input"))
    if kind == "extra_forbidden":
        hint = ""
        siblings = _field_names(root, loc[:-1])
        close = _close_matches(str(loc[-1]), siblings)
        if close:
            hint = f" (did you mean '{close[0]}'?)"
        elif siblings:
            hint = f" (expected one of: {', '.join(siblings)})"
        return f"unknown key '{path}'{hint}"
    if kind == "value_error":
        message = str(err["msg"]).removeprefix("Value error, ")
        # A value refused for holding a password is not echoed (logs, terminals).
        hidden = is_key or "password" in message
        return f"{path}: {message}" + ("" if hidden else f", got {value}")
    if kind == "literal_error":
        message = f"must be {err['ctx']['expected']}"
        if ACTION_TAG in err["loc"]:
            message += " (or a table of pattern = action)"
    elif kind == "greater_than":
        bound = err["ctx"]["gt"]
        message = f"must be > {int(bound) if float(bound).is_integer() else bound}"
    else:
        message = _TYPE_MESSAGES.get(kind, str(err["msg"]))
    return f"{path}: {message}, got {value}"


def _close_matches(key: str, options: list[str]) -> list[str]:
    close = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
    # A truncated name ("allow" for "allow_private") scores low but is a clear miss.
    return close or [o for o in options if len(key) >= 4 and o.startswith(key)][:1]


def _key_path(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        key = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
        out += f".{key}" if out else key
    return out or "<top level>"


def _field_names(root: type[BaseModel], loc: list[Any]) -> list[str]:
    """Valid keys of the table at `loc`, for "did you mean" hints."""
    current: Any = root
    parts = list(loc)
    while parts:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(parts.pop(0)))
            if field is None:
                return []
            current = field.annotation
        elif get_origin(current) is dict:
            parts.pop(0)  # a user id or permission name: any key is fine
            current = get_args(current)[1]
        else:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _short(value: Any, limit: int = 60) -> str:
    """The offending value, spelled the way TOML would (true, "text", [1])."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # circular structures from a Python dict
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
