"""The policy's words: a decision, and how denials and missing approvals are explained
(the exact TOML a user can add to their config to allow what was asked)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from local_tools.core.config import CONFIG_FILENAME
from local_tools.security.patterns import exact_only, suggest_pattern

__all__ = [
    "Action",
    "Decision",
    "decision_details",
    "denied_message",
    "described",
    "inline_table",
    "no_asker_message",
    "quoted",
    "rules_section",
    "suggested_rule",
    "toml_key",
]

Action = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one check; `rule` says which rule decided, for messages and logs."""

    action: Action
    permission: str
    subject: str | None
    rule: str


# --- rule descriptions -----------------------------------------------------------


def quoted(text: str) -> str:
    # JSON string syntax is valid TOML basic-string syntax.
    return json.dumps(text, ensure_ascii=False)


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else quoted(key)


def rules_section(user_id: str | None) -> str:
    return "[permissions]" if user_id is None else f"[users.{toml_key(user_id)}.permissions]"


def inline_table(entries: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f"{quoted(p)} = {quoted(a)}" for p, a in entries.items()) + " }"


# --- messages --------------------------------------------------------------------


def suggested_rule(permission: str, subject: str | None) -> str | None:
    """A command prefix the person may approve instead of one exact command line.

    Only for commands, and only a prefix of the words that were shown (`npm test *`
    for `npm test --watch`): never a wildcard that covers another program, and never
    one for a command not understood (see `exact_only`).
    """
    if permission != "execute:command" or subject is None:
        return None
    pattern = suggest_pattern(permission, subject)
    if pattern is None or pattern == subject or not pattern.endswith(" *"):
        return None
    return pattern


def described(d: Decision) -> str:
    return quoted(d.permission) + ("" if d.subject is None else f" for {quoted(d.subject)}")


def decision_details(d: Decision) -> dict[str, Any]:
    return {"permission": d.permission, "subject": d.subject, "action": d.action, "rule": d.rule}


def denied_message(d: Decision, tool: str) -> str:
    return (
        f"Permission denied: {described(d)} (tool {tool}) is denied by the rule {d.rule}. "
        "Do not retry this call. If it should be allowed, the user can change that rule "
        f"in {CONFIG_FILENAME} (the last matching rule wins)."
    )


def no_asker_message(
    pending: Sequence[Decision], section_user: str | None, existing: Any, tool: str
) -> str:
    first = pending[0]
    permission = first.permission
    subjects = [d.subject for d in pending]
    what = quoted(permission)
    if subjects != [None]:
        what += " for " + ", ".join(quoted(s) for s in subjects if s is not None)
    patterns = [suggest_pattern(permission, s) for s in subjects]
    if any(p is not None and exact_only(p) and ("*" in p or "?" in p) for p in patterns):
        # Rules read * and ? as wildcards: no rule names this subject alone.
        return (
            f"Permission needed: {what} (tool {tool}) requires the user's approval "
            f"(rule: {first.rule}), and no one is available to approve it. No rule can "
            "name it exactly (rules read * and ? as wildcards): only the user can approve "
            "it, when asked (run local-tools where they can answer, e.g. the terminal or "
            "the web console). Or write it so every word is spelled out: no $variables, "
            "$(...), {a,b} braces, or patterns where an option could be."
        )
    if None in patterns:
        value = quoted("allow")
    else:
        # Merge into what the user already wrote: TOML forbids a second
        # "perm" = ... line, and the new patterns must come last to win.
        entries = {"*": existing} if isinstance(existing, str) else dict(existing or {})
        for pattern in patterns:
            entries.pop(pattern, None)
            entries[pattern] = "allow"
        value = inline_table(entries)
    replacing = f" (in place of the existing {quoted(permission)} entry)" if existing else ""
    return (
        f"Permission needed: {what} (tool {tool}) requires the user's approval "
        f"(rule: {first.rule}), and no one is available to approve it. "
        f"Add to {CONFIG_FILENAME}: {rules_section(section_user)} {quoted(permission)} = {value}"
        f"{replacing} — this is the user's decision; tell them, and do not edit the "
        "config yourself."
    )
