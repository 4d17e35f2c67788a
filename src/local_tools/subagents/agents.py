"""Which agent a task runs and the tools it may call.

An agent is a profile plus instructions: built in `explore` (read-only) and `general`
(the `core` profile), and the user's `[task.agents.NAME]` (which may replace a built-in
of the same name). A subagent never gets the tools that would reach past its set
(find_tools, call_tool, batch) or the caller's conversation (its todo list, compact),
and never a tool the user is denied outright. It does share the caller's session, on
purpose: the background processes it starts and the checkpoints of its edits are the
caller's, so `general` (the core profile) may poll, feed or end those processes and
restore those edits, under the same rules and asks as the caller's own calls.
A read-only agent (explore) refuses any call that would change something (see
`read_only_refusal`), whatever tools it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from local_tools.core.arg_aliases import canonical_args
from local_tools.core.arg_checks import check_args
from local_tools.core.config import Config
from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.profiles import DEFAULT_PROFILE, Profile, UnknownProfile, resolve_profile
from local_tools.core.registry import Registry
from local_tools.core.tool import Tool
from local_tools.security.policy import Policy

__all__ = [
    "BUILTIN_AGENTS",
    "NEVER_GIVEN",
    "Agent",
    "agent_names",
    "agent_tools",
    "pick_agent",
    "read_only_refusal",
]

# find_tools/call_tool/batch would reach tools outside the agent's set; the todo list is
# the caller's (OpenCode keeps it from subagents too); compact rewrites the caller's
# conversation; `invalid` is the runner's own. `task` is added back only below max_depth.
NEVER_GIVEN = frozenset(
    {"find_tools", "call_tool", "batch", "todo_write", "todo_read", "compact", "invalid", "task"}
)

EXPLORE_TOOLS = (
    "read_file", "read_many_files", "list_dir", "file_stat", "glob", "grep", "web_fetch",
)  # fmt: skip


@dataclass(frozen=True)
class Agent:
    name: str
    role: str  # what it is for, the start of its system prompt
    prompt: str  # the user's instructions, added after the role
    profile: Profile
    model: str  # "": the task's model
    read_only: bool = False  # refuses every call that would change something


BUILTIN_AGENTS: dict[str, tuple[str, str]] = {
    "explore": (
        "You explore a workspace read-only: find files, read them, search them and fetch "
        "pages, then report what you found, with paths and line numbers. You cannot "
        "change anything.",
        "",
    ),
    "general": (
        "You are a general-purpose agent: research, change files and run commands as the "
        "task needs, then report what you did and found.",
        "",
    ),
}


def agent_names(config: Config) -> list[str]:
    return sorted({*BUILTIN_AGENTS, *config.task.agents})


def pick_agent(config: Config, name: str) -> Agent:
    """The agent called `name`; InvalidInput naming the known ones otherwise."""
    key = name.strip()
    custom = config.task.agents.get(key)
    if custom is not None:
        defined = {**config.profile_entries(), f"task.agents.{key}": list(custom.tools)}
        try:
            profile = resolve_profile(f"task.agents.{key}", defined)
        except UnknownProfile as exc:
            raise InvalidInput(f"[task.agents.{key}] tools: {exc}") from None
        builtin = BUILTIN_AGENTS.get(key)
        role = custom.description or (builtin[0] if builtin else f"You are the {key} agent.")
        read_only = custom.read_only or key == "explore"  # a replaced explore stays read-only
        return Agent(key, role, custom.prompt, profile, custom.model, read_only=read_only)
    if key == "explore":
        tools = (*EXPLORE_TOOLS, "lsp") if config.lsp.enabled else EXPLORE_TOOLS
        profile = Profile("explore", tools, False)
        return Agent(key, BUILTIN_AGENTS[key][0], "", profile, "", read_only=True)
    if key == "general":
        profile = resolve_profile(DEFAULT_PROFILE, config.profile_entries())
        return Agent(key, BUILTIN_AGENTS[key][0], "", profile, "")
    raise InvalidInput(
        f"There is no agent {name!r}. Agents: {', '.join(agent_names(config))} "
        "(add one in [task.agents.NAME])."
    )


def agent_tools(
    agent: Agent,
    registry: Registry,
    policy: Policy,
    user_id: str,
    *,
    nesting: bool,
) -> list[Tool]:
    """The enabled tools the agent's profile lists, less those never given to a subagent
    (`task` is kept when `nesting`: the depth allows one more level) and those the
    user is denied outright, exactly as a listing leaves them out."""
    never: frozenset[str] = NEVER_GIVEN - {"task"} if nesting else NEVER_GIVEN
    tools = []
    for tool in registry.enabled():
        if tool.name in never:
            continue
        custom = registry.source(tool.name) != "builtin"
        # `general` is the core profile, which does not list `task`: with nesting on it
        # gets it anyway; other agents only when their own list names it.
        nested = tool.name == "task" and agent.name == "general"
        if not (nested or agent.profile.lists(tool, custom=custom)):
            continue
        if tool.permission is not None and policy.denies_all(user_id, tool.permission):
            continue
        tools.append(tool)
    return tools


def read_only_refusal(tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext) -> str | None:
    """Why a read-only agent may not make this call; None when it may. It may when the
    tool only reads (hints read_only: grep, web_fetch), or when the tool declares what it
    changes (`changes=`) and says this call changes nothing (lsp's lookups, not a rename
    that applies). A tool that may change things and does not say what: refused."""
    if tool.hints.read_only:
        return None
    if tool.changes is None:
        return f"{tool.name} may change things"
    try:
        raw = canonical_args(tool, arguments)
        check_args(tool.args_model, raw)
        args = tool.args_model.model_validate(raw)
    except Exception:
        return None  # the runner refuses it the same way, saying what is wrong
    try:
        scope = tool.changes(args, ctx)
    except Exception:
        return f"{tool.name} may change things here"
    if scope is None or (not isinstance(scope, str) and not scope):
        return None
    return f"this {tool.name} call would change files"
