"""JSON Schema rewrites behind the tool declarations: inlining and OpenAI strict mode.

Kept apart from ``schemas.py`` (which only assembles each format's envelope) so the
rewrites can be read and tested on their own. See /work/shared/SCHEMAS.md for the
rules each consumer enforces.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = [
    "STRICT_KEYWORDS",
    "SchemaError",
    "accepts_null",
    "compact",
    "inline_refs",
    "restore_strict_arguments",
    "to_strict",
]

# Keywords OpenAI strict mode accepts (its docs plus reported errors); anything else is
# removed and, where a model could act on it, described in words instead.
STRICT_KEYWORDS = frozenset(
    {
        "type", "description", "properties", "required", "additionalProperties", "items",
        "anyOf", "enum", "const", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
MAX_NESTING = 10
MAX_ENUM_VALUES = 1000
MAX_PROPERTIES = 5000
# Keywords whose values are maps of name -> schema (their keys are not keywords).
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
NULL: dict[str, Any] = {"type": "null"}
# Bounds at or past these guard the runtime against abuse; no model argument nears them,
# so the published schema leaves them out (the tool's own model still enforces them).
GUARD_LENGTH = 1000
GUARD_NUMBER = 1_000_000


class SchemaError(ValueError):
    """A tool's schema breaks a consumer's rule that cannot be rewritten away."""


def _walk_children(node: dict[str, Any], fn: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: fn(sub) for name, sub in value.items()}
        elif isinstance(value, dict):
            out[key] = fn(value)
        elif isinstance(value, list) and key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [fn(v) for v in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace every local ``$ref`` with its definition and drop ``$defs``.

    Not every client resolves ``$ref`` (and none fetch remote ones), so declarations
    carry a self-contained schema. Keys next to a ``$ref`` (pydantic puts the field's
    description there) override the definition's.
    """
    defs: dict[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}

    def resolve(node: Any, stack: tuple[str, ...] = ()) -> Any:
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            name = ref.rsplit("/", 1)[-1]
            if not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")):
                raise SchemaError(f"$ref {ref!r} is not a local definition; clients cannot load it")
            if name in stack:
                raise SchemaError(f"recursive schema through {name!r}: no client format takes it")
            if name not in defs:
                raise SchemaError(f"$ref {ref!r} names no definition")
            target = resolve(defs[name], (*stack, name))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**target, **_walk_children(siblings, lambda n: resolve(n, stack))}
        # pydantic < 2.9 wraps a described $ref as allOf: [{$ref}]; flatten that case.
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            rest = {k: v for k, v in node.items() if k != "allOf"}
            return resolve({**all_of[0], **rest}, stack)
        return _walk_children(node, lambda n: resolve(n, stack))

    out = resolve({k: v for k, v in schema.items() if k not in ("$defs", "definitions")})
    assert isinstance(out, dict)
    return out


def _drop_null_branch(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [T, null]`` with a null default, as plain ``T``: leaving the field out says
    the same, and it is what pydantic writes for every ``T | None = None``."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or node.get("default", 0) is not None:
        return node
    kept = [b for b in branches if b != NULL]
    if len(kept) != 1 or not isinstance(kept[0], dict):
        return node
    rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
    return {**kept[0], **rest}


def _is_guard(key: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if key in ("maxLength", "maxItems"):
        return value >= GUARD_LENGTH
    return key in ("maximum", "exclusiveMaximum") and value >= GUARD_NUMBER


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """A self-contained schema (``inline_refs``) with what tells a model nothing left out.

    Optional fields that default to null lose the ``null`` branch and the ``default``
    (leaving the field out means the same), and guard bounds (``_is_guard``) go.
    Validation is the tool's args model, which keeps every rule; every value this schema
    allows, the model accepts too. Not for strict mode: ``to_strict`` needs the originals.
    """

    def walk(node: Any, optional: bool = False) -> Any:
        if not isinstance(node, dict):
            return node
        if optional:
            node = _drop_null_branch(node)
        node = {k: v for k, v in node.items() if not _is_guard(k, v)}
        required = set(node.get("required", []))
        out = _walk_children(node, walk)
        if isinstance(node.get("properties"), dict):
            props = node["properties"]
            out["properties"] = {n: walk(sub, n not in required) for n, sub in props.items()}
        return out

    result = walk(schema)
    assert isinstance(result, dict)
    return result


def accepts_null(node: dict[str, Any]) -> bool:
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    return any(accepts_null(b) for b in node.get("anyOf", []) + node.get("oneOf", []))


def _is_map(node: dict[str, Any]) -> bool:
    """A free-form map (``dict[str, T]``): strict mode has no way to say it as an object."""
    return isinstance(node.get("additionalProperties"), dict) and not node.get("properties")


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    if accepts_null(node):
        return node
    t = node.get("type")
    if "anyOf" in node:
        return {**node, "anyOf": [*node["anyOf"], dict(NULL)]}
    if isinstance(t, str) and "const" not in node:
        out = {**node, "type": [t, "null"]}
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    # Anything else (a const, a type list): wrap it, keeping the description outside.
    inner = {k: v for k, v in node.items() if k != "description"}
    out = {"anyOf": [inner, dict(NULL)]}
    if "description" in node:
        out["description"] = node["description"]
    return out


def _note(key: str, value: Any) -> str:
    if key == "minLength":
        return f"At least {value} character{'' if value == 1 else 's'}."
    if key == "maxLength":
        return f"At most {value} characters."
    if key == "default":
        return f"Default: {json.dumps(value)}."
    if key == "uniqueItems" and value:
        return "Items must be unique."
    return f"Also {key}: {json.dumps(value, sort_keys=True)}."


def _merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    """Fold ``allOf`` into one schema: strict mode rejects it, and models read one shape."""
    out = {k: v for k, v in node.items() if k != "allOf"}
    for part in node["allOf"]:
        for key, value in part.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = sorted({*out.get("required", []), *value})
            else:
                out.setdefault(key, value)
    return out


def _with_notes(node: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    if not notes:
        return node
    text = " ".join([node["description"], *notes] if node.get("description") else notes)
    return {**node, "description": text}


class _Strict:
    def __init__(self) -> None:
        self.properties = 0

    def node(self, node: dict[str, Any], depth: int) -> tuple[dict[str, Any], list[str]]:
        """Rewrite one schema node; returns it and notes for the enclosing field's text."""
        if "allOf" in node:
            node = _merge_all_of(node)
        if _is_map(node):
            return self.map(node, depth)
        notes: list[str] = []
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key not in STRICT_KEYWORDS:
                # A null default needs no words: null is what the model sends anyway.
                silent = key in ("title", "$schema", "$comment", "examples", "readOnly")
                if not silent and not (key == "default" and value is None):
                    notes.append(_note(key, value))
                continue
            out[key] = value
        if len(out.get("enum", ())) > MAX_ENUM_VALUES:
            raise SchemaError(f"an enum has more than {MAX_ENUM_VALUES} values")
        if "anyOf" in out:
            branches = []
            for branch in out["anyOf"]:
                b, n = self.node(branch, depth)
                branches.append(b)
                notes += n
            out["anyOf"] = branches
        if isinstance(out.get("items"), dict):
            item, n = self.node(out["items"], depth)
            out["items"] = item
            if n:
                notes.append("Each item: " + " ".join(x[0].lower() + x[1:] for x in n))
        if out.get("type") == "object" or "properties" in out:
            out = self.object(out, depth + 1)
        return out, notes

    def object(self, node: dict[str, Any], depth: int) -> dict[str, Any]:
        if depth > MAX_NESTING:
            raise SchemaError(f"objects nest deeper than {MAX_NESTING} levels")
        props = node.get("properties", {})
        self.properties += len(props)
        if self.properties > MAX_PROPERTIES:
            raise SchemaError(f"more than {MAX_PROPERTIES} properties")
        required = set(node.get("required", []))
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            rewritten, notes = self.node(sub, depth)
            rewritten = _with_notes(rewritten, notes)
            # Strict mode cannot leave a field out, so "optional" is said as "may be null".
            new_props[name] = rewritten if name in required else _nullable(rewritten)
        return {
            **node,
            "type": "object",
            "properties": new_props,
            "required": list(new_props),
            "additionalProperties": False,
        }

    def map(self, node: dict[str, Any], depth: int) -> tuple[dict[str, Any], list[str]]:
        # dict[str, T] becomes a list of {key, value} pairs; restore_strict_arguments
        # turns it back into the map the tool takes.
        value, notes = self.node(node["additionalProperties"], depth + 1)
        pair = {
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": _with_notes(value, notes)},
            "required": ["key", "value"],
            "additionalProperties": False,
        }
        self.properties += 2
        out = {"type": "array", "items": pair}
        text = "A list of {key, value} pairs."
        out["description"] = f"{node['description']} {text}" if node.get("description") else text
        return out, []


def to_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema OpenAI strict mode accepts, saying what it cannot enforce in words."""
    inlined = inline_refs(schema)
    root, notes = _Strict().node({**inlined, "type": "object"}, 0)
    return _with_notes(root, notes)


def restore_strict_arguments(schema: dict[str, Any], arguments: Any) -> Any:
    """Undo the strict rewrite on a model's arguments so the tool's own model accepts them.

    A null for an optional field that never took null means "left out"; a list of
    {key, value} pairs goes back to a map. ``schema`` is the tool's original schema.
    """
    return _restore(inline_refs(schema), arguments)


def _restore(node: dict[str, Any], value: Any) -> Any:
    if value is None:
        return None
    if "allOf" in node:
        node = _merge_all_of(node)
    if _is_map(node) and isinstance(value, list):
        sub = node["additionalProperties"]
        pairs = [p for p in value if isinstance(p, dict) and "key" in p]
        return {p["key"]: _restore(sub, p.get("value")) for p in pairs}
    if isinstance(value, dict) and "properties" in node:
        required = set(node.get("required", []))
        out: dict[str, Any] = {}
        for key, v in value.items():
            sub = node["properties"].get(key)
            if sub is None:
                out[key] = v
            elif v is None and key not in required and not accepts_null(sub):
                continue
            else:
                out[key] = _restore(sub, v)
        return out
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_restore(node["items"], v) for v in value]
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else ""
        if kind and (branch.get("type") == kind or (kind == "array" and _is_map(branch))):
            return _restore(branch, value)
    return value
