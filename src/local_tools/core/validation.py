"""Turn pydantic validation errors into messages a model can act on."""

from __future__ import annotations

import difflib
import reprlib
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

if TYPE_CHECKING:
    from local_tools.core.tool import Tool

__all__ = ["describe_parameters", "describe_validation_error"]


def describe_validation_error(tool: Tool, exc: ValidationError) -> str:
    props: dict[str, Any] = tool.parameters.get("properties", {})
    problems: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        kind = err["type"]
        if kind == "missing":
            problems.append(f"'{loc}' is required but missing")
        elif kind == "extra_forbidden":
            guess = difflib.get_close_matches(str(err["loc"][-1]), list(props), n=1)
            hint = f" (did you mean '{guess[0]}'?)" if guess else ""
            problems.append(f"'{loc}' is not a parameter of {tool.name}{hint}")
        else:
            problems.append(f"'{loc}': {err['msg']} (got {_short_repr(err.get('input'))})")
    return (
        f"Invalid arguments for {tool.name}: "
        + "; ".join(problems)
        + f". Parameters: {describe_parameters(tool)}."
    )


_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60


def _short_repr(value: Any) -> str:
    try:
        return _repr.repr(value)
    except Exception:  # huge ints, deep nesting: the type is enough
        return f"a {type(value).__name__}"


def describe_parameters(tool: Tool) -> str:
    schema = tool.parameters
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        kind = (
            prop.get("type")
            or "/".join(str(option.get("type", "?")) for option in prop.get("anyOf", []))
            or "value"
        )
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts) or "none"
