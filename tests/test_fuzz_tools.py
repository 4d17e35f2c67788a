"""No input is an internal error: every listed tool, fuzzed from the schema a model sees.

For each tool of the "full" profile, hypothesis-jsonschema draws arguments from the
tool's MCP ``inputSchema`` and hostile mutations of them (wrong types, unknown keys,
NUL characters, lone surrogates, huge integers, non-finite floats, deep nesting,
over-long strings, arguments that are not an object at all). Every call must come back
as an envelope (the runner never raises), and a failure must never be INTERNAL_ERROR.

Safe by construction: a throwaway workspace and state dir; an asker that denies
everything; rules that deny commands, the network, deletes, screenshots and scripts in
pages; no display (open_in_folder and screenshot cannot open anything); the browser
tools point at a Chromium that does not exist, so none starts. Bounded and reproducible:
a few examples per tool, derandomized.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from local_tools import Toolbox
from local_tools.core.errors import ErrorCode
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.transports.schemas import to_mcp

EXAMPLES = 8  # per tool and strategy: the three tests together take well under 90 s

SAFE_CONFIG: dict[str, Any] = {
    "permissions": {
        "execute:command": "deny",
        "network:outbound": "deny",
        "delete:file": "deny",
        "system:screenshot": "deny",
        "browser:evaluate": "deny",
    },
    "browser": {"executable": "/nonexistent/chromium-for-the-fuzz-test"},
}


class DenyingAsker:
    """Nobody says yes: an `ask` rule is a denial."""

    async def ask(self, request: PermissionRequest) -> Answer:
        return "deny"


@pytest.fixture(scope="module")
def fuzz_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    root = tmp_path_factory.mktemp("fuzz")
    ws = root / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    (ws / "sub" / "b.py").write_text("print('b')\n")
    mp = pytest.MonkeyPatch()
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "LOCAL_TOOLS_CONFIG"):
        mp.delenv(name, raising=False)
    mp.setenv("LOCAL_TOOLS_STATE_DIR", str(root / "state"))
    box = Toolbox(
        ws,
        SAFE_CONFIG,
        state_dir=root / "state",
        asker=DenyingAsker(),
        plugins=False,
        trust=False,
        profile="full",
    )
    try:
        yield box
    finally:
        box.close()
        mp.undo()


def _listed_names(tmp: Path) -> list[str]:
    with Toolbox(tmp, {}, state_dir=tmp / "state", audit=False, plugins=False, trust=False) as box:
        return sorted(t["name"] for t in box.tools(profile="full"))


with tempfile.TemporaryDirectory() as _tmp:
    TOOL_NAMES = _listed_names(Path(_tmp))

# Values that must each be refused cleanly wherever they land.
_DEEP_LIST: Any = []
_DEEP_DICT: Any = {}
for _ in range(200):
    _DEEP_LIST = [_DEEP_LIST]
    _DEEP_DICT = {"a": _DEEP_DICT}
HOSTILE_VALUES: list[Any] = [
    "a\x00b",
    "\x00",
    "*.py\x00",
    "\ud800",
    "x\udfffy",
    2**63,
    -(2**63) - 1,
    10**40,
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    "x" * 100_000,
    "../" * 50 + "etc/passwd",
    "/etc/passwd",
    _DEEP_LIST,
    _DEEP_DICT,
    [],
    {},
    None,
    True,
    -1,
    0,
    "",
    ["a\x00"],
    {"k\x00": 1},
]
hostile = st.sampled_from(HOSTILE_VALUES)


def _schema_args(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    try:
        return from_schema(schema)
    except Exception:  # a schema hypothesis-jsonschema cannot draw from: mutations only
        return st.just({})


def _mutated(args: Any, data: st.DataObject, keys: list[str]) -> Any:
    """One or two hostile changes to schema-valid arguments."""
    out = dict(args) if isinstance(args, dict) else {}
    kind = data.draw(st.sampled_from(["replace", "replace", "nested", "unknown"]))
    if kind == "unknown":
        out[data.draw(st.sampled_from(["zzz", "k\x00", "\ud800", "path_"]))] = data.draw(hostile)
        return out
    key = data.draw(st.sampled_from(keys)) if keys else "x"
    value = data.draw(hostile)
    if kind == "nested" and isinstance(out.get(key), list) and out[key]:
        inner = out[key][0]
        if isinstance(inner, dict) and inner:
            inner = dict(inner)
            inner[data.draw(st.sampled_from(sorted(inner)))] = value
            out[key] = [inner, *out[key][1:]]
            return out
    out[key] = value
    return out


def _check(box: Toolbox, name: str, args: Any) -> None:
    envelope = box.run(name, args)
    assert isinstance(envelope, dict) and "success" in envelope, envelope
    # Every transport can send it: JSON, valid UTF-8 (no lone surrogate echoed back).
    json.dumps(envelope, ensure_ascii=False, default=str).encode("utf-8")
    if not envelope["success"]:
        assert envelope["error"]["error_code"] != ErrorCode.INTERNAL_ERROR.value, (
            name,
            args,
            envelope["error"]["message"],
        )


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize("name", TOOL_NAMES)
@FUZZ
@given(data=st.data())
def test_schema_arguments_never_internal_error(fuzz_box: Toolbox, name: str, data: Any) -> None:
    schema = to_mcp(fuzz_box.registry.resolve(name))["inputSchema"]
    _check(fuzz_box, name, data.draw(_schema_args(schema)))


@pytest.mark.parametrize("name", TOOL_NAMES)
@FUZZ
@given(data=st.data())
def test_hostile_arguments_never_internal_error(fuzz_box: Toolbox, name: str, data: Any) -> None:
    schema = to_mcp(fuzz_box.registry.resolve(name))["inputSchema"]
    keys = sorted(schema.get("properties", {}))
    shape = data.draw(st.sampled_from(["mutated", "mutated", "mutated", "not-an-object"]))
    if shape == "not-an-object":
        args = data.draw(st.sampled_from([[], ["a"], "path=a.txt", 1, None, _DEEP_LIST]))
    else:
        args = _mutated(data.draw(_schema_args(schema)), data, keys)
    _check(fuzz_box, name, args)


# Each parameter, one at a time, set to each of these on top of the simplest valid
# arguments: the values that reached the OS, SQLite or a codec before (a random draw
# finds a NUL in glob's pattern only now and then).
EACH_PARAMETER: list[Any] = [
    "a\x00b",
    "\udc80",
    2**63,
    -(2**64),
    2**63 - 1,
    -(2**63),
    2**31,
    1e308,
    -1e308,
    math.nan,
    math.inf,
    _DEEP_LIST,
    "x" * 20_000,
    "é" * 300,
]


def _simplest(schema: dict[str, Any]) -> dict[str, Any]:
    try:
        found = find(_schema_args(schema), lambda _: True, settings=settings(database=None))
    except Exception:
        return {}
    if not isinstance(found, dict):
        return {}
    # The simplest string is "", which most tools refuse before reaching anything deeper.
    return {k: "a.txt" if v == "" else v for k, v in found.items()}


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_each_parameter_refuses_unusable_values(fuzz_box: Toolbox, name: str) -> None:
    schema = to_mcp(fuzz_box.registry.resolve(name))["inputSchema"]
    base = _simplest(schema)
    for key, prop in schema.get("properties", {}).items():
        for value in EACH_PARAMETER:
            _check(fuzz_box, name, {**base, key: value})
        items = prop.get("items") if isinstance(prop, dict) else None
        item = _simplest(items) if isinstance(items, dict) and "properties" in items else None
        for inner in (item or {}).keys() | (items or {}).get("properties", {}).keys():
            for value in EACH_PARAMETER:
                _check(fuzz_box, name, {**base, key: [{**(item or {}), inner: value}]})
