"""Profiles: which tools are listed to a model.

A profile is a list of entries, each a toolset, a tool name, a glob over either, or the
name of another profile. Listing is all it decides: every enabled tool stays callable by
name under the same permissions, and `find_tools` loads more into a session.

Built in: `core` (what a coding agent uses every day; the default of every door), `full`
(everything), and one per toolset family. Users add theirs in `[profiles.NAME]` and pick
one with `[toolsets] profile` or `--profile`; several names joined by commas (`core,browser`)
list the union. Tools that did not come with local-tools (workspace plugins, entry points,
`Toolbox(tools=...)`) are listed by every built-in profile: someone installed them to be
used. A profile of the user's own lists exactly what it names.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from local_tools.core.registry import Registry
    from local_tools.core.tool import Tool
    from local_tools.security.policy import Policy

__all__ = [
    "ALWAYS_LISTED",
    "BUILTIN_PROFILES",
    "DEFAULT_PROFILE",
    "Profile",
    "UnknownProfile",
    "listed_tools",
    "listing_version",
    "load_into_session",
    "loaded_in_session",
    "resolve_profile",
]

DEFAULT_PROFILE = "core"

# What each built-in profile lists (the finder's own tools are listed by all of them).
BUILTIN_PROFILES: dict[str, tuple[str, ...]] = {
    "core": (
        "files", "search", "shell",
        "web_fetch", "todo_write", "todo_read", "question", "skill",
    ),
    "full": ("*",),
    "browser": ("browser",),
    "knowledge": ("memory", "project"),
    "review": ("review",),
    "web": ("web",),
    "system": ("system",),
    "checkpoints": ("checkpoints",),
    "models": ("models",),
}  # fmt: skip

# Listed in every profile: how a model finds and reaches the rest.
ALWAYS_LISTED = ("find_tools", "call_tool")


# Keys of a session's scratch state (ToolContext.session): what find_tools loaded into
# it, and a counter that changes whenever that grows (transports tell clients to re-list).
_LOADED = "profiles.loaded"
_VERSION = "profiles.version"


class UnknownProfile(ValueError):
    """A profile name that is neither built in nor defined in `[profiles]`."""


@dataclass(frozen=True)
class Profile:
    """A resolved profile: its name as given and the entries it lists."""

    name: str
    patterns: tuple[str, ...]
    builtin: bool  # only built-in profiles list other sources' tools unasked

    def lists(self, tool: Tool, *, custom: bool = False) -> bool:
        """Whether this profile lists `tool` (`custom`: it did not come with local-tools)."""
        if tool.name in ALWAYS_LISTED or (custom and self.builtin):
            return True
        return any(
            fnmatch.fnmatchcase(tool.toolset, p) or fnmatch.fnmatchcase(tool.name, p)
            for p in self.patterns
        )


MAX_PROFILES = 64  # in [profiles]: an untrusted workspace may set them
MAX_ENTRIES = 256  # per profile


def resolve_profile(spec: str, defined: Mapping[str, Sequence[str]] | None = None) -> Profile:
    """`spec`: one profile name or several joined by commas. A profile of `defined`
    (the config's `[profiles]`) may name toolsets, tools, globs and other profiles;
    one of the same name as a built-in replaces it (and inside its own list, its name
    means the toolset: `[profiles.browser] tools = ["browser", "screenshot"]`). Each
    profile is expanded once, so nesting costs linear time. Raises UnknownProfile."""
    defined = defined or {}
    if len(defined) > MAX_PROFILES:
        raise UnknownProfile(f"at most {MAX_PROFILES} profiles in [profiles]")
    for name, entries in defined.items():
        if len(entries) > MAX_ENTRIES:
            raise UnknownProfile(f"profile {name!r} has over {MAX_ENTRIES} entries")
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise UnknownProfile(f"no profile named in {spec!r}; {_known(defined)}")
    expanded: dict[str, tuple[str, ...]] = {}
    patterns: list[str] = []
    for name in names:
        patterns += _expand(name, defined, expanded)
    builtin = all(n not in defined and n in BUILTIN_PROFILES for n in names)
    return Profile(",".join(names), tuple(dict.fromkeys(patterns)), builtin)


def _expand(
    root: str, defined: Mapping[str, Sequence[str]], expanded: dict[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """`root`'s patterns, expanding the profiles it names depth first without recursion
    (a chain of thousands must not exhaust the stack); each profile once (`expanded`)."""
    if root not in defined and root not in BUILTIN_PROFILES:
        raise UnknownProfile(f"unknown profile {root!r}; {_known(defined)}")
    path: list[str] = []  # the profiles being expanded, outermost first
    stack: list[str] = [root]
    while stack:
        name = stack[-1]
        if name in expanded:
            stack.pop()
            continue
        if name not in defined:  # a built-in, not replaced
            expanded[name] = BUILTIN_PROFILES[name]
            stack.pop()
            continue
        pending = [e for e in _profiles_named(name, defined) if e not in expanded]
        if not pending:
            patterns: list[str] = []
            for entry in defined[name]:
                named = entry != name and _is_profile(entry, defined)
                patterns += expanded[entry] if named else [entry]
            expanded[name] = tuple(dict.fromkeys(patterns))
            stack.pop()
            if path and path[-1] == name:
                path.pop()
            continue
        if name in path:
            raise UnknownProfile(f"profile {name!r} includes itself ({' -> '.join(path)})")
        path.append(name)
        for entry in pending:
            if entry in path:
                cycle = " -> ".join((*path, entry))
                raise UnknownProfile(f"profile {entry!r} includes itself ({cycle})")
            stack.append(entry)
    return expanded[root]


def _profiles_named(name: str, defined: Mapping[str, Sequence[str]]) -> list[str]:
    return [e for e in defined[name] if e != name and _is_profile(e, defined)]


def _is_profile(entry: str, defined: Mapping[str, Sequence[str]]) -> bool:
    return entry in defined or (entry in BUILTIN_PROFILES and entry not in _TOOLSETS)


# Profile names that are also toolset names mean the toolset inside a profile's list.
_TOOLSETS = frozenset({"browser", "review", "web", "system"})


def _known(defined: Mapping[str, Sequence[str]]) -> str:
    names = sorted({*BUILTIN_PROFILES, *defined})
    return "known profiles: " + ", ".join(names)


def listed_tools(
    registry: Registry,
    policy: Policy,
    profile: Profile,
    session: Mapping[str, Any],
    user_id: str,
) -> list[Tool]:
    """What a door lists to `user_id` in a session: the enabled tools the profile lists
    or the session loaded, less those whose permission is denied to the user outright
    (a model is not offered what it can never use)."""
    loaded: set[str] = session.get(_LOADED, set())
    listed = []
    for tool in registry.listable():
        if tool.name == "invalid":
            continue
        custom = registry.source(tool.name) != "builtin"
        if not (tool.name in loaded or profile.lists(tool, custom=custom)):
            continue
        if tool.permission is not None and policy.denies_all(user_id, tool.permission):
            continue
        listed.append(tool)
    return listed


def loaded_in_session(session: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(session.get(_LOADED, ()))


def load_into_session(session: MutableMapping[str, Any], names: Iterable[str]) -> list[str]:
    """Add tools to what a session lists; the names that were new."""
    loaded: set[str] = session.setdefault(_LOADED, set())
    new = [name for name in dict.fromkeys(names) if name not in loaded]
    if new:
        loaded.update(new)
        session[_VERSION] = session.get(_VERSION, 0) + 1
    return new


def listing_version(session: Mapping[str, Any]) -> int:
    """Changes whenever the session's loaded tools do (0: none loaded)."""
    return int(session.get(_VERSION, 0))
