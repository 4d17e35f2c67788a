"""JSON Schema (Draft 2020-12) validation of JSON, TOML and YAML documents.

Only `jsonschema` is used, with no retrieval of remote `$ref`s: a schema that points
to a URL fails as an invalid schema rather than reaching the network.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from local_tools.core.errors import InvalidInput
from local_tools.knowledge.schema_patterns import check_patterns

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["FORMATS", "check_schema", "format_of", "parse", "validate"]

FORMATS = {".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}
MAX_ERRORS = 100


def format_of(path: str) -> str:
    lower = path.lower()
    for suffix, fmt in FORMATS.items():
        if lower.endswith(suffix):
            return fmt
    return "json"


def parse(text: str, fmt: str, what: str) -> Any:
    """The document in `text`; a syntax error is InvalidInput naming the line."""
    try:
        if fmt == "toml":
            return tomllib.loads(text)
        if fmt == "yaml":
            try:
                import yaml  # type: ignore[import-untyped]
            except ImportError:
                raise InvalidInput(
                    f"{what} is YAML, and reading YAML needs PyYAML, which is not installed. "
                    "Convert it to JSON or TOML, or install PyYAML."
                ) from None
            return yaml.safe_load(text)
        return json.loads(text)
    except InvalidInput:
        raise
    except ValueError as exc:  # JSONDecodeError, TOMLDecodeError
        raise InvalidInput(f"{what} is not valid {fmt.upper()}: {exc}") from None
    except Exception as exc:  # yaml.YAMLError and kin
        raise InvalidInput(f"{what} is not valid {fmt.upper()}: {exc}") from None


def check_schema(schema: Any) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, (dict, bool)):
        raise InvalidInput("The schema must be a JSON object (or true/false).")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = _json_path(exc.absolute_path)
        raise InvalidInput(
            f"The schema is not a valid JSON Schema (at {where}): {exc.message}"
        ) from None
    check_patterns(schema)  # the model's regexes: none may freeze the process


def validate(document: Any, schema: Any) -> tuple[list[dict[str, str]], int]:
    """Every error (at most MAX_ERRORS) as {path, message, schema_path}, and how many
    there are in all."""
    from jsonschema import Draft202012Validator
    from referencing.exceptions import Unresolvable

    check_schema(schema)
    validator = Draft202012Validator(schema)
    try:
        errors = sorted(
            validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path))
        )
    except Unresolvable as exc:
        raise InvalidInput(
            f"The schema has a $ref that cannot be resolved ({exc}); only references inside "
            "the schema are followed."
        ) from None
    out = [
        {
            "path": _json_path(e.absolute_path),
            "message": e.message,
            "schema_path": "/".join(map(str, e.absolute_schema_path)),
        }
        for e in errors[:MAX_ERRORS]
    ]
    return out, len(errors)


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path
