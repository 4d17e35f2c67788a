"""Profiles, the finder and call_tool through the Python API: what is listed to a model,
what a session loads, and that listing never grants (every enabled tool is callable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Args, Toolbox, tool
from local_tools.core.config import ConfigError
from local_tools.core.profiles import BUILTIN_PROFILES, resolve_profile

CORE = {
    "read_file", "read_many_files", "write_file", "edit", "multi_edit", "apply_patch",
    "list_dir", "file_stat", "file_delete", "file_move", "file_copy", "glob", "grep",
    "exec_cmd", "process_output", "process_input", "process_kill", "process_list",
    "web_fetch", "question", "todo_write", "todo_read", "skill", "find_tools", "call_tool",
}  # fmt: skip
BROWSER = {
    "browser_launch", "browser_navigate", "browser_snapshot", "browser_click", "browser_type",
    "browser_scroll", "browser_hover", "browser_press_key", "browser_screenshot",
    "browser_get_dom", "browser_evaluate", "browser_wait_for", "browser_go_back",
    "browser_go_forward", "browser_reload", "browser_get_state",
}  # fmt: skip


def names(tb: Toolbox, **kw: Any) -> set[str]:
    return {t["name"] for t in tb.tools(**kw)}


class EchoArgs(Args):
    text: str


@tool("echo_custom", args=EchoArgs, description="Echo the text.", blocking=False)
def echo_custom(args: EchoArgs, ctx: Any) -> dict[str, Any]:
    return {"text": args.text}


# -- profiles ---------------------------------------------------------------------------


def test_the_default_is_core_and_full_lists_every_enabled_tool(tb: Toolbox) -> None:
    assert tb.profile.name == "core"
    assert names(tb) == CORE
    every = names(tb, profile="full")
    # task and compact need a model: with none configured they are not listed
    assert every == {t.name for t in tb.registry.enabled()} - {"invalid", "task", "compact"}
    assert len(every) == 79 and every >= BROWSER


def test_the_model_tools_are_listed_once_a_model_is_configured(
    make_toolbox: Any, tb: Toolbox
) -> None:
    assert not {"task", "compact"} & names(tb, profile="full")
    assert "task" not in {
        t["name"] for t in ok(tb.run("find_tools", {"query": "subagent"}))["tools"]
    }
    # still callable by name: the tool says what is missing and how to add it
    message = err(tb.run("task", {"description": "look", "prompt": "find it"}), "EXECUTION_ERROR")
    assert "[models." in message
    configured = make_toolbox(
        {"models": {"local": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}}
    )
    assert {"task", "compact"} <= names(configured, profile="full")
    assert names(configured, profile="models") == {"task", "compact", "find_tools", "call_tool"}
    assert names(configured) == CORE  # not in the default listing: find_tools finds them
    found = ok(configured.run("find_tools", {"query": "delegate to a subagent"}))
    assert "task" in {t["name"] for t in found["tools"]}


def test_an_unlisted_tool_is_callable_by_name(tb: Toolbox, workspace: Path) -> None:
    assert "create_requirement" not in names(tb)
    made = ok(tb.run("create_requirement", {"title": "Sign in"}))
    assert made["id"] == "REQ-001"
    assert ok(tb.run("get_requirements"))["items"][0]["title"] == "Sign in"


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("browser", BROWSER | {"find_tools", "call_tool"}),
        ("core,browser", CORE | BROWSER),
        ("system", {"screenshot", "open_in_folder", "find_tools", "call_tool"}),
    ],
)
def test_builtin_profiles_and_unions(make_toolbox: Any, profile: str, expected: set[str]) -> None:
    assert names(make_toolbox(profile=profile)) == expected


def test_knowledge_is_memory_and_project(make_toolbox: Any) -> None:
    tb = make_toolbox(profile="knowledge")
    toolsets = {t["toolset"] for t in tb.tools()} - {"agent"}
    assert toolsets == {"memory", "project"}


def test_a_profile_from_config(make_toolbox: Any) -> None:
    config = {
        "toolsets": {"profile": "frontend"},
        "profiles": {
            "frontend": {"tools": ["core", "browser_*", "http_request"]},
            "tiny": {"tools": ["read_file", "grep"], "description": "reads only"},
        },
    }
    tb = make_toolbox(config)
    assert tb.profile.name == "frontend"
    assert names(tb) == CORE | BROWSER | {"http_request"}
    assert names(tb, profile="tiny") == {"read_file", "grep", "find_tools", "call_tool"}


def test_unknown_and_circular_profiles_are_config_errors(make_toolbox: Any) -> None:
    with pytest.raises(
        ConfigError,
        match="unknown profile 'nope'; known profiles: browser, checkpoints, core, full, "
        "knowledge, models",
    ):
        make_toolbox(profile="nope")
    with pytest.raises(ConfigError, match=r"toolsets\.profile: unknown profile 'missing'"):
        make_toolbox({"toolsets": {"profile": "missing"}})
    circular = {"profiles": {"a": {"tools": ["b"]}, "b": {"tools": ["a"]}}}
    with pytest.raises(ConfigError, match="includes itself"):
        make_toolbox(circular, profile="a")


def test_disabled_toolsets_still_win(make_toolbox: Any) -> None:
    tb = make_toolbox({"toolsets": {"disabled": ["browser", "shell"]}}, profile="full")
    listed = names(tb)
    assert not listed & BROWSER and "exec_cmd" not in listed
    assert err(tb.run("browser_get_state"), "UNKNOWN_TOOL")


def test_custom_tools_are_listed_by_builtin_profiles_only(make_toolbox: Any) -> None:
    tb = make_toolbox(tools=[echo_custom])
    assert "echo_custom" in names(tb) and "echo_custom" in names(tb, profile="browser")
    mine = make_toolbox({"profiles": {"mine": {"tools": ["grep"]}}}, tools=[echo_custom])
    assert "echo_custom" not in names(mine, profile="mine")
    assert ok(mine.run("echo_custom", {"text": "hi"})) == {"text": "hi"}


def test_a_tool_denied_outright_is_not_listed(make_toolbox: Any) -> None:
    config = {
        "permissions": {"execute:command": "deny", "network:outbound": {"*": "deny"}},
        "users": {"bob": {"permissions": {"write:file": "deny"}}},
    }
    tb = make_toolbox(config)
    listed = names(tb)
    assert "exec_cmd" not in listed and "process_input" not in listed
    assert "web_fetch" not in listed and "write_file" in listed
    assert "write_file" not in names(tb, user_id="bob")
    # A single rule that can still allow something keeps the tool listed.
    some = make_toolbox({"permissions": {"execute:command": {"*": "deny", "git *": "ask"}}})
    assert "exec_cmd" in names(some)


def test_every_builtin_profile_resolves() -> None:
    for name in BUILTIN_PROFILES:
        assert resolve_profile(name).patterns


# -- find_tools ---------------------------------------------------------------------------


def test_find_tools_loads_a_toolset_into_the_session_only(tb: Toolbox) -> None:
    assert tb.listing_version(session_id="s1") == 0
    found = ok(tb.run("find_tools", {"query": "browser"}, session_id="s1"))
    assert set(found["loaded"]) == BROWSER
    assert {t["name"] for t in found["tools"]} == BROWSER
    assert all(t["listed"] and t["parameters"]["type"] == "object" for t in found["tools"])
    assert tb.listing_version(session_id="s1") == 1
    assert names(tb, session_id="s1") == CORE | BROWSER
    assert names(tb, session_id="s2") == CORE  # another conversation
    assert names(tb, user_id="bob", session_id="s1") == CORE  # another user's
    again = ok(tb.run("find_tools", {"query": "browser"}, session_id="s1"))
    assert again["loaded"] == [] and tb.listing_version(session_id="s1") == 1
    tb.end_session("default", "s1")
    assert names(tb, session_id="s1") == CORE


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("screenshot", {"browser_screenshot", "screenshot"}),
        ("requirements", {"create_requirement", "get_requirements"}),
        ("an HTTP request", {"http_request"}),
        ("deploy the website", {"copy_workspace_to_project"}),
    ],
)
def test_find_tools_by_words(tb: Toolbox, query: str, expected: set[str]) -> None:
    found = ok(tb.run("find_tools", {"query": query, "load": False}))
    assert expected <= {t["name"] for t in found["tools"]}
    assert found["loaded"] == [] and names(tb) == CORE


def test_find_tools_says_when_nothing_matches(tb: Toolbox) -> None:
    envelope = tb.run("find_tools", {"query": "xyzzy plugh"})
    assert ok(envelope) == {"tools": [], "loaded": []}
    assert "No tool matched" in tb.render(envelope)


def test_find_tools_never_offers_a_denied_tool(make_toolbox: Any) -> None:
    tb = make_toolbox({"permissions": {"network:outbound": "deny"}})
    found = ok(tb.run("find_tools", {"query": "http request web"}))
    assert not {"http_request", "web_fetch", "web_search"} & {t["name"] for t in found["tools"]}


def test_loading_is_audited_and_grants_nothing(make_toolbox: Any) -> None:
    tb = make_toolbox({"permissions": {"network:outbound": {"*": "ask"}}}, audit=True)
    ok(tb.run("find_tools", {"query": "http"}, session_id="s"))
    assert "http_request" in names(tb, session_id="s")
    # Loaded, and still asks: with nobody to ask, denied, naming the rule.
    message = err(
        tb.run("http_request", {"url": "https://example.com/"}, session_id="s"),
        "PERMISSION_DENIED",
    )
    assert "network:outbound" in message
    assert tb.audit is not None
    logged = tb.audit.query(tool="find_tools", limit=5)
    assert logged and logged[0].args == {"query": "http"}


# -- call_tool ---------------------------------------------------------------------------


def test_call_tool_runs_the_named_tool(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    envelope = tb.run("call_tool", {"name": "read_file", "arguments": {"path": "a.txt"}})
    out = ok(envelope)
    assert out["tool"] == "read_file" and out["output"]["content"] == "one\ntwo\n"
    assert tb.render(envelope) == tb.render(tb.run("read_file", {"path": "a.txt"}))
    # Arguments as JSON text, as some clients send objects.
    text = ok(tb.run("call_tool", {"name": "get_requirements", "arguments": "{}"}))
    assert text["tool"] == "get_requirements"


def test_call_tool_passes_errors_through(make_toolbox: Any) -> None:
    tb = make_toolbox({"permissions": {"delete:file": "deny"}})
    missing = tb.run("call_tool", {"name": "read_file", "arguments": {"path": "nope.txt"}})
    assert "nope.txt" in err(missing, "NOT_FOUND")
    denied = tb.run("call_tool", {"name": "file_delete", "arguments": {"path": "x"}})
    err(denied, "PERMISSION_DENIED")
    err(tb.run("call_tool", {"name": "no_such_tool"}), "UNKNOWN_TOOL")
    bad = tb.run("call_tool", {"name": "read_file", "arguments": {"path": 5}})
    assert "read_file" in err(bad, "INVALID_INPUT")
    for nested in ("call_tool", "batch", "Batch"):
        assert "does not run" in err(tb.run("call_tool", {"name": nested}), "INVALID_INPUT")
    not_object = err(tb.run("call_tool", {"name": "x", "arguments": "[]"}), "INVALID_INPUT")
    assert "must be an object of the tool's arguments" in not_object


def test_the_called_tools_call_is_audited_under_the_call_tool_call(make_toolbox: Any) -> None:
    tb = make_toolbox(audit=True)
    outer = tb.run("call_tool", {"name": "list_dir", "arguments": {}})
    ok(outer)
    assert tb.audit is not None
    inner = tb.audit.query(tool="list_dir", limit=1)[0]
    assert inner.call_id == outer["meta"]["call_id"] + ".1"


def test_batch_does_not_nest_call_tool(tb: Toolbox) -> None:
    message = err(tb.run("batch", {"tool_calls": [{"tool": "call_tool"}]}), "INVALID_INPUT")
    assert "is a call_tool; batches do not nest" in message


# -- what a review found -------------------------------------------------------------------


def test_profiles_naming_each_other_twice_expand_in_linear_time(make_toolbox: Any) -> None:
    # Each level names the one below twice: expanded naively that is 2**40 entries.
    profiles = {f"p{i}": {"tools": [f"p{i - 1}", f"p{i - 1}"]} for i in range(1, 41)}
    profiles["p0"] = {"tools": ["core", "http_request"]}
    tb = make_toolbox({"profiles": profiles, "toolsets": {"profile": "p40"}})
    assert names(tb) == CORE | {"http_request"}
    ok(tb.run("find_tools", {"query": "browser", "load": False}))  # resolves every profile


def test_too_many_profiles_is_a_config_error(make_toolbox: Any) -> None:
    chain = {f"p{i}": {"tools": [f"p{i - 1}"]} for i in range(1, 1500)}
    chain["p0"] = {"tools": ["core"]}
    with pytest.raises(ConfigError, match="at most 64 profiles"):
        make_toolbox({"profiles": chain})


def test_a_builtin_profile_extended_under_its_own_name(make_toolbox: Any) -> None:
    tb = make_toolbox({"profiles": {"browser": {"tools": ["browser", "screenshot"]}}})
    assert names(tb, profile="browser") == BROWSER | {"screenshot", "find_tools", "call_tool"}


def test_description_only_matches_are_shown_not_loaded(tb: Toolbox) -> None:
    found = ok(tb.run("find_tools", {"query": "atomically"}, session_id="s"))
    assert found["tools"] and found["loaded"] == []
    assert not any(t["listed"] for t in found["tools"] if t["name"] not in CORE)
    assert tb.listing_version(session_id="s") == 0


def test_json_text_nested_past_the_parser_is_invalid_input(tb: Toolbox) -> None:
    deep = "[" * 100_000
    assert err(tb.run("call_tool", {"name": "x", "arguments": deep}), "INVALID_INPUT")
    assert err(tb.run("batch", {"tool_calls": deep}), "INVALID_INPUT")


def test_call_tool_json_text_arguments_are_redacted_in_the_audit(make_toolbox: Any) -> None:
    tb = make_toolbox(audit=True)
    text = '{"command": "true", "env": {"DB_URL_PART": "hunter2-secret"}}'
    tb.run("call_tool", {"name": "exec_cmd", "arguments": text})
    assert tb.audit is not None
    tb.audit.flush()
    row = tb.audit.query(tool="call_tool", limit=1)[0]
    assert "hunter2" not in str(row.args) and "DB_URL_PART" in str(row.args)
