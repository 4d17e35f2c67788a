"""find_tools: search the tools this profile does not list, and load them into the session.

Words are matched against tool names, toolsets, profile names and descriptions (engine:
core/profiles.py keeps what a session loaded). A word naming a toolset or profile
(`browser`, `knowledge`) loads all of its tools; otherwise the best matches load. Loading
lists them to this session only and grants nothing: they run under the same permissions.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import ExecutionError
from local_tools.core.profiles import (
    ALWAYS_LISTED,
    BUILTIN_PROFILES,
    listed_tools,
    load_into_session,
    resolve_profile,
)
from local_tools.core.tool import Args, Hints, Output, Tool, tool

MAX_MATCHES = 8  # tools loaded for words that name no toolset
_STOP = frozenset(
    "a an and the to for of in on with by from my me i need want use using tool tools "
    "some something do can that this".split()
)


class FindToolsArgs(Args):
    query: str = Field(
        min_length=1,
        max_length=500,
        description="What you need, in words: 'browser', 'screenshot', 'requirements'.",
    )
    load: bool = Field(True, description="Add the tools found to your list for this session.")


class FoundTool(Output):
    name: str = Field(description="The tool's name: call it by this name.")
    toolset: str = Field(description="Its toolset.")
    summary: str = Field(description="What it does.")
    listed: bool = Field(description="Whether it is in your tool list now.")
    parameters: dict[str, Any] = Field(description="Its arguments' JSON Schema.")


class FindToolsOutput(Output):
    tools: list[FoundTool] = Field(description="The tools found, best first.")
    loaded: list[str] = Field(description="The tools this call added to your list.")


DESCRIPTION = """Find tools that are not in your list (browser, memory, project \
requirements, review, undo, HTTP, screenshots ...) and add them for this session.

Give words for what you need; a toolset's name (browser, web, memory, project, knowledge,
review, checkpoints, system) loads all of its tools. Returns each tool with its parameters. Call a
loaded tool by its name; if your tool list did not refresh, use call_tool."""


@tool(
    "find_tools",
    args=FindToolsArgs,
    description=DESCRIPTION,
    hints=Hints(read_only=True, idempotent=True),
    toolset="agent",
    blocking=False,
    output=FindToolsOutput,
    render=lambda output: _render(output),
)
def find_tools(args: FindToolsArgs, ctx: ToolContext) -> dict[str, Any]:
    runner = ctx.runner
    if runner is None:
        raise ExecutionError("find_tools reads the tools of a runner, and this call has none.")
    listed = {t.name for t in listed_tools(*_listing(ctx))}
    candidates = [
        t
        for t in runner.registry.listable()
        if t.name not in ("invalid", *ALWAYS_LISTED)
        and (t.permission is None or not ctx.policy.denies_all(ctx.user_id, t.permission))
    ]
    words = [w for w in re.findall(r"[a-z0-9]+", args.query.casefold()) if w not in _STOP]
    groups = _groups(ctx)
    named = {g for w in words for g in (w, _singular(w)) if g in groups}
    in_groups = [t for t in candidates if any(_in_group(t, groups[g]) for g in named)]
    scored = sorted(
        ((score, t) for t in candidates if (score := _score(t, words)) > 0),
        key=lambda pair: (-pair[0], pair[1].name),
    )
    strong = [t for score, t in scored if score >= _NAME_HIT][:MAX_MATCHES]
    chosen = list({t.name: t for t in (*in_groups, *strong)}.values())
    # Only description words matched: shown, not loaded (a guess should not grow the list).
    weak = [] if chosen else [t for _, t in scored[:3]]
    found = chosen + weak
    new = [t.name for t in chosen if t.name not in listed]
    loaded = load_into_session(ctx.session, new) if args.load else []
    now = listed | set(loaded)
    return {
        "tools": [
            {
                "name": t.name,
                "toolset": t.toolset,
                "summary": t.description.split("\n\n", 1)[0].replace("\n", " "),
                "listed": t.name in now,
                "parameters": t.parameters,
            }
            for t in found
        ],
        "loaded": loaded,
    }


def _listing(ctx: ToolContext) -> tuple[Any, ...]:
    runner = ctx.runner
    assert runner is not None
    return (runner.registry, ctx.policy, runner.profile, ctx.session, ctx.user_id)


def _groups(ctx: ToolContext) -> dict[str, tuple[str, ...]]:
    """Names that load a whole group: toolsets, and the profiles (built in and the user's)."""
    runner = ctx.runner
    assert runner is not None
    defined = ctx.config.profile_entries()
    groups: dict[str, tuple[str, ...]] = {t.toolset: (t.toolset,) for t in runner.registry.all()}
    for name in (*BUILTIN_PROFILES, *defined):
        if name not in ("full", "core"):  # "load everything" is not a search
            groups[name] = resolve_profile(name, defined).patterns
    groups.pop("agent", None)
    return groups


def _in_group(t: Tool, patterns: tuple[str, ...]) -> bool:
    return t.toolset in patterns or t.name in patterns


_NAME_HIT = 4


def _score(t: Tool, words: list[str]) -> int:
    """Name (or alias) and toolset hits weigh most; description words count once each."""
    name_parts = [p for n in (t.name, *t.aliases) for p in n.casefold().split("_")]
    text = set(re.findall(r"[a-z0-9]+", t.description.casefold()))
    score = 0
    for word in words:
        stem = _singular(word)
        if word == t.name.casefold() or stem in name_parts or word in name_parts:
            score += 6
        elif (
            (len(stem) >= 4 and any(part.startswith(stem) for part in name_parts))
            or stem == t.toolset
            or word == t.toolset
        ):
            score += _NAME_HIT
        elif stem in text or word in text or any(_singular(w) == stem for w in text):
            score += 1
    return score


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _render(output: dict[str, Any]) -> str:
    tools = output.get("tools") or []
    if not tools:
        return (
            "No tool matched. Try other words, or a toolset: browser, web, memory, project, "
            "review, system."
        )
    loaded = output.get("loaded") or []
    lines = [
        f"Loaded into this session: {', '.join(loaded)}. Call them by name; if your tool "
        "list did not refresh, use call_tool."
        if loaded
        else "Found (already in your list where marked listed):"
    ]
    for t in tools:
        mark = "" if t.get("listed") else " (not loaded)"
        params = json.dumps(t.get("parameters"), separators=(",", ":"), ensure_ascii=False)
        lines.append(f"- {t['name']}{mark}: {t['summary']}\n  parameters: {params}")
    return "\n".join(lines)
