"""What the openlink browser extension needs beyond plain JSON: argument coercion, the
system prompt (`GET /prompt`), the `/tools` listing, and `/exec` results.

The extension reads `<tool name="x" call_id="..."><parameter name="p">v</parameter></tool>`
out of a web chat's reply and POSTs `{"name", "args", "callId"}` to `/exec`. Every value
parsed from a `<parameter>` tag is a string, untrimmed ("2\\n", "true", '["a","b"]'), so
`coerce_args` turns strings into the types the tool's JSON Schema asks for before the
runner validates them:

- a parameter that may be a string (`string`, `["string", "null"]`, `anyOf` with a
  string) keeps the value exactly as written, whitespace included;
- otherwise the value is trimmed and tried against each allowed type, in the order
  null ("null" or empty), boolean ("true"/"false", any case), integer, number, array
  (JSON text), object (JSON text); arrays and objects are coerced item by item;
- a value that converts to none of them is passed on unchanged, so the runner's
  validation error names the parameter and what it got.

Pure functions of a Toolbox and its registry: no HTTP here (see `http_server.py`).
"""

from __future__ import annotations

import json
import math
import platform
import re
import time
from collections.abc import Mapping
from typing import Any

from local_tools.core.arg_aliases import target_name
from local_tools.core.tool import Tool

__all__ = [
    "coerce_args",
    "coerce_value",
    "exec_result",
    "parameter_lines",
    "prompt_text",
    "tools_listing",
    "type_label",
]

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_ORDER = ("null", "boolean", "integer", "number", "array", "object")


# -- coercion ---------------------------------------------------------------------


def coerce_args(tool: Tool | None, args: Any) -> Any:
    """`args` with strings converted to the types `tool`'s schema asks for (see module doc).

    Anything that is not an object of named arguments, or a call of an unknown tool, is
    returned unchanged: the runner answers it with the error.
    """
    if tool is None or not isinstance(args, Mapping):
        return args
    schema = tool.parameters
    return _coerce_object(dict(args), schema, schema.get("$defs", {}))


def coerce_value(value: Any, schema: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> Any:
    """One value against its (sub)schema; `defs` resolves `#/$defs/...` references."""
    if schema is None:
        return value
    schema = _deref(schema, defs)
    if isinstance(value, str):
        types = _types(schema, defs)
        if not types or "string" in types:
            return value
        text = value.strip()
        for kind in _ORDER:
            if kind in types:
                ok, converted = _CONVERTERS[kind](text)
                if ok:
                    return coerce_value(converted, schema, defs)
        return value
    if isinstance(value, list):
        items = _branch(schema, defs, "array")
        if items is not None and isinstance(items.get("items"), Mapping):
            return [coerce_value(v, items["items"], defs) for v in value]
        return value
    if isinstance(value, dict):
        obj = _branch(schema, defs, "object")
        return _coerce_object(value, obj, defs) if obj is not None else value
    return value


def _coerce_object(
    value: dict[str, Any], schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> dict[str, Any]:
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    out: dict[str, Any] = {}
    for key, item in value.items():
        # An alias the runner will rename (`replaceAll`) is coerced by its target's type.
        name = key if key in props else (target_name(key, props) or key)
        sub = props.get(name, extra if isinstance(extra, Mapping) else None)
        out[key] = coerce_value(item, sub, defs)
    return out


def _deref(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < 20:
        name = schema["$ref"].rpartition("/")[2]
        target = defs.get(name)
        if not isinstance(target, Mapping):
            return schema
        schema, seen = target, seen + 1
    return schema


def _branches(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`schema` itself and the branches of its anyOf / oneOf / allOf, references resolved."""
    out = [schema]
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping):
                out.extend(_branches(_deref(branch, defs), defs))
    return out


def _types(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> set[str]:
    """The JSON types `schema` allows; empty when it does not say (any value)."""
    found: set[str] = set()
    for branch in _branches(schema, defs):
        declared = branch.get("type")
        if isinstance(declared, str):
            found.add(declared)
        elif isinstance(declared, list):
            found.update(t for t in declared if isinstance(t, str))
        literals = list(branch.get("enum") or ())
        if "const" in branch:
            literals.append(branch["const"])
        found.update(_json_type(v) for v in literals)
    if "number" in found:
        found.add("integer")  # an integer is a number; tried first so "2" stays an int
    return found


def _branch(
    schema: Mapping[str, Any], defs: Mapping[str, Any], kind: str
) -> Mapping[str, Any] | None:
    for branch in _branches(schema, defs):
        declared = branch.get("type")
        if declared == kind or (isinstance(declared, list) and kind in declared):
            return branch
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _to_null(text: str) -> tuple[bool, Any]:
    return (True, None) if text in ("", "null") else (False, None)


def _to_bool(text: str) -> tuple[bool, Any]:
    lowered = text.lower()
    return (True, lowered == "true") if lowered in ("true", "false") else (False, None)


def _to_int(text: str) -> tuple[bool, Any]:
    if _INTEGER.fullmatch(text):
        try:
            return True, int(text)
        except ValueError:  # more digits than Python converts
            return False, None
    ok, number = _to_number(text)
    if ok and isinstance(number, float) and number.is_integer():
        return True, int(number)  # "2.0"
    return False, None


def _to_number(text: str) -> tuple[bool, Any]:
    if not _NUMBER.fullmatch(text):
        return False, None
    try:
        number = int(text) if _INTEGER.fullmatch(text) else float(text)
    except ValueError:
        return False, None
    if isinstance(number, float) and math.isinf(number):
        return False, None  # "1e999"
    return True, number


def _to_json(kind: type, opening: str) -> Any:
    def convert(text: str) -> tuple[bool, Any]:
        if not text.startswith(opening):
            return False, None
        try:
            value = json.loads(text)
        except ValueError:
            return False, None
        return (True, value) if isinstance(value, kind) else (False, None)

    return convert


_CONVERTERS = {
    "null": _to_null,
    "boolean": _to_bool,
    "integer": _to_int,
    "number": _to_number,
    "array": _to_json(list, "["),
    "object": _to_json(dict, "{"),
}


# -- describing tools ---------------------------------------------------------------


def type_label(schema: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> str:
    """A short type for people and models: "integer", "array of string", "object {a, b?}"."""
    if not schema:
        return "any"
    schema = _deref(schema, defs)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        labels = [
            type_label(b, defs)
            for b in options
            if isinstance(b, Mapping) and _deref(b, defs).get("type") != "null"
        ]
        return " or ".join(dict.fromkeys(labels)) or "null"
    if "enum" in schema:
        return "one of " + "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    declared = schema.get("type")
    if isinstance(declared, list):
        kinds = [t for t in declared if t != "null"] or ["null"]
        return " or ".join(type_label({**schema, "type": t}, defs) for t in kinds)
    if declared == "array":
        items = schema.get("items")
        return f"array of {type_label(items, defs)}" if isinstance(items, Mapping) else "array"
    if declared == "object":
        props = schema.get("properties")
        if props:
            required = set(schema.get("required", ()))
            names = ", ".join(p if p in required else f"{p}?" for p in props)
            return f"object {{{names}}}"
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"object of {type_label(extra, defs)}"
        return "object"
    return str(declared) if declared else "any"


def parameter_lines(tool: Tool) -> dict[str, str]:
    """openlink's parameter map: name -> "type (required|optional[, default X]) - text"."""
    schema = tool.parameters
    defs = schema.get("$defs", {})
    required = set(schema.get("required", ()))
    out: dict[str, str] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if name in required:
            flag = "required"
        elif prop.get("default") is not None:
            flag = f"optional, default {json.dumps(prop['default'], ensure_ascii=False)}"
        else:
            flag = "optional"
        text = " ".join(str(prop.get("description", "")).split())
        out[name] = f"{type_label(prop, defs)} ({flag})" + (f" - {text}" if text else "")
    return out


def _listed(tb: Any) -> list[Tool]:
    return list(tb.listed())


def tools_listing(tb: Any) -> dict[str, Any]:
    """`GET /tools`: openlink's shape (`parameters` maps each name to a description
    string), plus the full JSON Schema as `input_schema` for clients that want types."""
    return {
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "parameters": parameter_lines(t),
                "input_schema": t.parameters,
            }
            for t in _listed(tb)
        ]
    }


# -- the system prompt ----------------------------------------------------------------

_FORMAT = """\
## How to call a tool
Write the call in your reply, exactly in this form, then stop:

<tool name="read_file" call_id="k3x9q">
<parameter name="path">src/app.py</parameter>
<parameter name="offset">120</parameter>
</tool>

- `name` first, then `call_id`, both in double quotes.
- `call_id`: a new random id of 5 or more letters and digits for every call \
(like "q7w2x", "m4p8z"), never reused, never 1, 2, 3.
- One `<parameter>` per argument. Values are written verbatim: quotes, newlines and \
backslashes need no escaping. Numbers and true/false as plain text; lists and objects \
as JSON, e.g. ["a.py", "b.py"].
- A value must never contain `</parameter>` or `</tool>`.
"""

_RULES = """\
## Rules
- One tool call per reply. Then stop and wait: the result comes back as the next \
message. Never guess or invent a result.
- Paths are relative to the workspace.
- Read big files in pages (offset/limit); find things with grep and glob before reading.
- Change files with edit (or multi_edit / apply_patch); use write_file for new files.
- A result starting with "Error [CODE]" says what went wrong: fix the call and retry. \
A permission denial names the rule the user can add; tell the user, do not work around it.
"""


def _system_info(tb: Any) -> str:
    system = f"{platform.system()} {platform.release()} ({platform.machine()})"
    shell = "cmd.exe" if platform.system() == "Windows" else "bash"
    return (
        "## System\n"
        f"- OS: {system}; exec_cmd runs {shell}\n"
        f"- Workspace: {tb.workspace}\n"
        f"- Time: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n"
    )


def _tool_text(tool: Tool) -> str:
    """A tool in the prompt: its summary (the description's first paragraph) and its
    parameters; the full description is one find_tools call away."""
    summary = " ".join(tool.description.split("\n\n", 1)[0].split())
    lines = [f"### {tool.name}", summary]
    params = parameter_lines(tool)
    if params:
        lines.extend(f"- {name}: {text}" for name, text in params.items())
    return "\n".join(lines)


_MORE = """\
## More tools
Only everyday tools are listed. For others (browser, HTTP requests, memory, project \
requirements and tasks, review, screenshots), call find_tools with words for what you \
need: it answers with their parameters; then call them by name.
"""


def _skill_line(skill: Mapping[str, Any]) -> str:
    name, description = skill.get("name", ""), skill.get("description", "")
    return f"- **{name}**: {description}" if description else f"- **{name}**"


def prompt_text(tb: Any, skills: list[dict[str, Any]]) -> str:
    """`GET /prompt`: the system prompt that teaches a web chat the tool-call format,
    generated from the registry (enabled tools only)."""
    parts = [
        "You can use tools on the user's computer through local-tools (the openlink "
        "extension runs the tool calls you write and sends you the results). Work in "
        "the workspace below; be brief.\n",
        _system_info(tb),
        _FORMAT,
        _RULES,
        # A web chat names any tool in its reply: call_tool has nothing to add there.
        "## Tools\n\n"
        + "\n\n".join(_tool_text(t) for t in _listed(tb) if t.name != "call_tool")
        + "\n",
        _MORE,
    ]
    if skills:
        listed = "\n".join(_skill_line(s) for s in skills)
        parts.append(f"## Skills\n{listed}\n")
    parts.append("Reply now only with: Ready. What should I do?\n")
    return "\n".join(parts)


# -- /exec results ------------------------------------------------------------------


def exec_result(tb: Any, envelope: Mapping[str, Any]) -> dict[str, Any]:
    """An envelope as openlink's `/exec` answer: `output` is always the text the model
    reads (the extension pastes it into the chat); a failure repeats it as `error`."""
    text = tb.render(envelope)
    if envelope.get("success"):
        return {"status": "success", "output": text}
    return {"status": "error", "output": text, "error": text}
