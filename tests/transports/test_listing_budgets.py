"""What every built-in tool costs a model, measured as the model sees it, against the budgets.

The size of a tool is its MCP listing entry (name, description, inputSchema) as JSON:
what a client pastes into the model's context. A description that grows past a budget
fails here rather than in someone's context window.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools.core.tool import Tool
from local_tools.toolbox import Toolbox
from local_tools.tools import builtin_tools
from local_tools.transports.openlink import prompt_text
from local_tools.transports.schemas import to_mcp

MAX_DESCRIPTION = 1024  # OpenAI's cap on a function description
MAX_SUMMARY = 200  # the first paragraph: the short form in /prompt and the tool finder
MAX_PARAMETER_DESCRIPTION = 200  # one or two lines
# Every built-in tool together (issue #21: 60,000), plus the checkpoint tools (#24), plus
# task and compact (#25: listed only once a model is configured).
MAX_ALL_TOOLS = 65_000
MAX_DEFAULT_PROFILE = 24_000  # what every door lists by default (the core profile)
MAX_PROMPT = 12_130  # openlink's /prompt for the default profile: openlink's own size


@pytest.fixture(scope="module")
def tools() -> list[Tool]:
    found = [t for t in builtin_tools() if t.name != "invalid"]
    assert len(found) >= 70
    return found


def listing_size(t: Tool) -> int:
    """Characters of the tool's MCP tools/list entry a model reads."""
    m = to_mcp(t)
    entry = {"name": m["name"], "description": m["description"], "inputSchema": m["inputSchema"]}
    return len(json.dumps(entry))


def summary(description: str) -> str:
    """The first paragraph: text up to the first blank line."""
    return description.strip().split("\n\n", 1)[0]


def parameter_descriptions(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every ``description`` in a JSON Schema, nested objects and ``$defs`` included."""
    if isinstance(node, dict):
        if isinstance(node.get("description"), str):
            yield where, node["description"]
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                for name, sub in value.items():
                    yield from parameter_descriptions(sub, f"{where}.{name}")
            elif key != "description":
                yield from parameter_descriptions(value, where)
    elif isinstance(node, list):
        for item in node:
            yield from parameter_descriptions(item, where)


def test_every_description_fits_openais_cap(tools: list[Tool]) -> None:
    long = {t.name: len(t.description) for t in tools if len(t.description) > MAX_DESCRIPTION}
    assert long == {}


def test_every_description_opens_with_a_short_summary(tools: list[Tool]) -> None:
    # Shown alone where a list of tools must stay short, so it must say what the tool does.
    long = {
        t.name: len(summary(t.description))
        for t in tools
        if len(summary(t.description)) > MAX_SUMMARY
    }
    assert long == {}
    assert all(summary(t.description) for t in tools)


def test_every_parameter_description_is_a_line_or_two(tools: list[Tool]) -> None:
    long = {
        f"{t.name}{where}": len(text)
        for t in tools
        for where, text in parameter_descriptions(t.parameters)
        if where and len(text) > MAX_PARAMETER_DESCRIPTION
    }
    assert long == {}


def test_all_tools_together_fit_the_budget(tools: list[Tool]) -> None:
    sizes = {t.name: listing_size(t) for t in tools}
    total = sum(sizes.values())
    biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total <= MAX_ALL_TOOLS, f"{total} characters; biggest: {biggest}"


@pytest.fixture
def default_toolbox(tmp_path: Path) -> Iterator[Toolbox]:
    (tmp_path / "ws").mkdir()
    tb = Toolbox(tmp_path / "ws", state_dir=tmp_path / "state", audit=False, plugins=False)
    yield tb
    tb.close()


def test_the_default_profile_fits_its_budget(default_toolbox: Toolbox) -> None:
    listed = default_toolbox.listed()
    assert {"read_file", "exec_cmd", "find_tools", "call_tool"} <= {t.name for t in listed}
    total = sum(listing_size(t) for t in listed)
    assert total <= MAX_DEFAULT_PROFILE, f"{total} characters for {len(listed)} tools"


def test_the_openlink_prompt_fits_openlinks_own_size(default_toolbox: Toolbox) -> None:
    text = prompt_text(default_toolbox, [])
    assert len(text) <= MAX_PROMPT, len(text)
    assert "call find_tools" in text  # and says how to load more


# --- what the listing leaves out, validation still enforces ------------------------------


def test_listing_leaves_out_null_branches_and_guard_bounds(tools: list[Tool]) -> None:
    by_name = {t.name: to_mcp(t)["inputSchema"].get("properties", {}) for t in tools}
    include = by_name["grep"]["include"]
    assert include["type"] == "string" and "anyOf" not in include and "default" not in include
    offset = by_name["read_file"]["offset"]
    assert offset["minimum"] == 1 and "maximum" not in offset  # 10**9 tells a model nothing
    assert "maxLength" not in by_name["grep"]["pattern"]
    # Bounds a model can meet stay listed.
    assert by_name["grep"]["context"]["maximum"] == 10
    assert by_name["exec_cmd"]["timeout"]["maximum"] == 600


def test_what_the_listing_leaves_out_is_still_enforced(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("one\ntwo\n")
    tb = Toolbox(tmp_path / "ws", state_dir=tmp_path / "state", audit=False, plugins=False)
    try:
        # A null where the listing now says only "string" is still taken as "left out".
        env = tb.run("grep", {"pattern": "one", "include": None})
        assert env["success"] and env["output"]["total"] == 1, env
        env = tb.run("read_file", {"path": "a.txt", "offset": 10**9 + 1})
        assert env["error"]["error_code"] == "INVALID_INPUT", env
        env = tb.run("grep", {"pattern": "x" * 10_001})
        assert env["error"]["error_code"] == "INVALID_INPUT", env
    finally:
        tb.close()
