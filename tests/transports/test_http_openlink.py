"""openlink's string arguments coerced to the schema's types, the /tools and /prompt
texts, on the real tools' schemas and on a custom tool with every kind of type."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from local_tools import Args, Toolbox, ToolContext, tool
from local_tools.transports.openlink import (
    coerce_args,
    exec_result,
    parameter_lines,
    prompt_text,
    tools_listing,
)


class Pair(BaseModel):
    n: int
    flag: bool = False


class KindsArgs(Args):
    text: str
    count: int = 1
    ratio: float = 0.5
    on: bool = False
    maybe: int | None = None
    either: int | str = 0
    names: list[str] = Field(default_factory=list)
    numbers: list[int] = Field(default_factory=list)
    pairs: list[Pair] = Field(default_factory=list)
    env: dict[str, int] = Field(default_factory=dict)
    mode: Literal["fast", "slow"] = "fast"
    level: Literal[1, 2, 3] = 1


@tool("kinds", args=KindsArgs, toolset="custom", permission=None)
def kinds(args: KindsArgs, ctx: ToolContext) -> dict[str, Any]:
    """Echo the arguments with their types."""
    return {"args": args.model_dump()}


@pytest.fixture
def box(make_toolbox: Any) -> Toolbox:
    return make_toolbox(tools=[kinds])  # type: ignore[no-any-return]


def _coerce(box: Toolbox, args: dict[str, Any]) -> dict[str, Any]:
    return coerce_args(box.registry.resolve("kinds"), args)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "raw", "want"),
    [
        ("count", "2", 2),
        ("count", "\n 2 \n", 2),
        ("count", "-3", -3),
        ("count", "2.0", 2),
        ("ratio", "0.25\n", 0.25),
        ("ratio", "1e3", 1000),  # an integer is a number
        ("ratio", "2", 2),
        ("on", "true", True),
        ("on", "False\n", False),
        ("maybe", "null", None),
        ("maybe", "  ", None),
        ("maybe", "7", 7),
        ("either", "7", "7"),  # a string is allowed: kept as written
        ("text", "\n  x = 1  \n", "\n  x = 1  \n"),  # strings keep their whitespace
        ("text", "true", "true"),
        ("names", '["a", "b"]\n', ["a", "b"]),
        ("numbers", '["1", 2]', [1, 2]),  # items coerced too
        ("pairs", '[{"n": "4", "flag": "true"}]', [{"n": 4, "flag": True}]),
        ("env", '{"A": "1"}', {"A": 1}),
        ("level", "2", 2),
        ("mode", "slow", "slow"),
    ],
)
def test_strings_become_the_schema_types(box: Toolbox, name: str, raw: str, want: Any) -> None:
    got = _coerce(box, {name: raw})[name]
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("count", "two"),
        ("count", "2.5"),
        ("count", "1" * 5000),  # beyond Python's int conversion limit
        ("names", "a, b"),
        ("names", '{"a": 1}'),
        ("env", "[1]"),
        ("maybe", "none"),
    ],
)
def test_what_does_not_convert_is_passed_as_written(box: Toolbox, name: str, raw: str) -> None:
    assert _coerce(box, {name: raw})[name] == raw
    envelope = box.run("kinds", _coerce(box, {"text": "t", name: raw}))
    assert not envelope["success"]
    assert f"'{name}" in envelope["error"]["message"]  # the runner names the parameter


def test_lenient_spellings_are_left_to_the_runner(box: Toolbox) -> None:
    # Not converted here; pydantic's own lax rules take "yes" and "1e999" (inf) as they are.
    assert _coerce(box, {"on": "yes", "ratio": "1e999"}) == {"on": "yes", "ratio": "1e999"}


def test_coerced_call_runs_and_odd_shapes_pass_through(box: Toolbox) -> None:
    args = {"text": "t", "count": "3\n", "on": "TRUE", "pairs": '[{"n": "1"}]'}
    env = box.run("kinds", _coerce(box, args))
    assert env["success"], env
    out = env["output"]["args"]
    assert out["count"] == 3 and out["on"] is True and out["pairs"] == [{"n": 1, "flag": False}]
    assert _coerce(box, {"unknown": "1"}) == {"unknown": "1"}  # the runner names it
    assert coerce_args(box.registry.resolve("kinds"), ["a"]) == ["a"]
    assert coerce_args(None, {"count": "1"}) == {"count": "1"}


def test_real_tools_xml_arguments(tb: Toolbox) -> None:
    resolve = tb.registry.resolve
    read = coerce_args(resolve("read_file"), {"path": "a.txt\n", "offset": "2\n", "limit": "5"})
    assert read == {"path": "a.txt\n", "offset": 2, "limit": 5}
    cmd = coerce_args(
        resolve("exec_cmd"),
        {"command": "ls", "timeout": "2.5", "yield_after": "null", "env": '{"A": "1"}'},
    )
    assert cmd == {"command": "ls", "timeout": 2.5, "yield_after": None, "env": {"A": "1"}}
    edits = coerce_args(
        resolve("multi_edit"),
        {"path": "x", "edits": '[{"old_string": "1", "new_string": "2", "replace_all": "true"}]'},
    )
    assert edits["edits"] == [{"old_string": "1", "new_string": "2", "replace_all": True}]


def test_parameter_lines_and_tools_listing(box: Toolbox) -> None:
    lines = parameter_lines(box.registry.resolve("kinds"))  # type: ignore[arg-type]
    assert lines["text"] == "string (required)"
    assert lines["count"] == "integer (optional, default 1)"
    assert lines["maybe"] == "integer (optional)"
    assert lines["either"] == "integer or string (optional, default 0)"
    assert lines["names"] == "array of string (optional)"
    assert lines["pairs"] == "array of object {n, flag?} (optional)"
    assert lines["env"] == "object of integer (optional)"
    assert lines["mode"] == 'one of "fast"|"slow" (optional, default "fast")'
    listed = {t["name"]: t for t in tools_listing(box)["tools"]}
    assert "invalid" not in listed
    assert listed["kinds"]["parameters"] == lines
    assert listed["kinds"]["input_schema"]["required"] == ["text"]


def test_prompt_lists_tools_and_skills(box: Toolbox) -> None:
    text = prompt_text(box, [{"name": "deploy", "description": "Ship it"}, {"name": "bare"}])
    assert text.count('<tool name="') == 1 and 'call_id="k3x9q"' in text
    assert "### kinds\nEcho the arguments with their types.\n- text: string" in text
    assert "## Skills\n- **deploy**: Ship it\n- **bare**\n" in text
    # A tool without parameters is its name and summary alone.
    plist = box.registry.resolve("process_list")
    assert plist is not None
    summary = " ".join(plist.description.split("\n\n")[0].split())
    assert f"### process_list\n{summary}\n\n###" in text
    # The profile's tools (a custom tool is listed by every built-in profile), each once,
    # the finder among them, with how to load the rest.
    for t in box.listed():
        assert text.count(f"\n### {t.name}\n") == (t.name != "call_tool"), t.name
    assert "### browser_launch" not in text and "call find_tools" in text
    assert "## Skills" not in prompt_text(box, [])


def test_exec_result_always_has_text_output(box: Toolbox) -> None:
    ok = exec_result(box, box.run("kinds", {"text": "t"}))
    assert ok["status"] == "success" and set(ok) == {"status", "output"}
    bad = exec_result(box, box.run("kinds", {}))
    assert bad["status"] == "error" and bad["output"] == bad["error"]
    assert (
        bad["output"].startswith("Error [INVALID_INPUT]") and "'text' is required" in bad["output"]
    )
