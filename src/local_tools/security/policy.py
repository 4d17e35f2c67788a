"""The permission engine: allow / deny / ask rules with wildcard patterns (DESIGN §4).

Rules are read in order — built-in defaults, the config's `[permissions]`, then
`[users.<id>.permissions]`, then the user's "allow always" approvals — and the last
rule whose pattern matches the subject wins. Patterns: `*` any text, `?` one
character, anchored at both ends; a trailing ` *` is optional, so `"ls *"` also
matches bare `ls`. A plain action is the same as `{ "*" = action }`.

Subjects are what a tool acts on: the workspace-relative path for `*:file`, each
simple command for `execute:command`, the host for `network:outbound`. A call
with no subject is checked against `"*"` rules only.

`evaluate` runs on every tool call, so rules are compiled once per (user,
permission) and matched without allocation beyond the returned `Decision`.
The pattern language is in `patterns`, the built-in rules in `defaults`, and the
"allow always" answers in `approvals`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, cast

from local_tools.core.config import Config
from local_tools.core.errors import PermissionDenied
from local_tools.interact.base import Asker, NoPersonAvailable, PermissionRequest
from local_tools.security.approvals import ApprovalStore
from local_tools.security.defaults import DEFAULT_PERMISSIONS, PROTECTED_PERMISSIONS
from local_tools.security.patterns import (
    _bounded,
    _Hit,
    _Literal,
    _pattern_regex,
    exact_only,
)
from local_tools.security.policy_messages import (
    Action,
    Decision,
    decision_details,
    denied_message,
    described,
    inline_table,
    no_asker_message,
    quoted,
    rules_section,
    suggested_rule,
)

__all__ = ["Action", "Decision", "Policy", "check_permission"]
_ACTIONS = ("allow", "deny", "ask")

# Path subjects compare case-insensitively where the file system usually does,
# so `.ENV` cannot sidestep the `.env` rule on macOS and Windows.
_CASELESS_PATHS = sys.platform in ("win32", "darwin")


# --- the policy ------------------------------------------------------------------

_Match = Callable[[str], "re.Match[str] | _Hit | None"]
# A rule as compiled: its action, its description, and whether it names its subject (no
# leading `*`, or a person's "always" answer): such a rule lifts the built-in protections.
_Rule = tuple[Action, str, bool]
# (path-like permission, fullmatch of the rules or None, the rule by regex group, the
# rule when nothing matches or for the generic check; the built-in protections apart:
# their fullmatch or None, (action, description) by group).
_Compiled = tuple[
    bool,
    _Match | None,
    tuple[_Rule, ...],
    _Rule,
    _Match | None,
    tuple[tuple[Action, str], ...],
]


class Policy:
    """Decides allow / deny / ask for (user, permission, subject)."""

    _MAX_CACHED = 4096  # compiled (user, permission) rule lists kept

    def __init__(
        self,
        permissions: Mapping[str, Any] | None = None,
        users: Mapping[str, Mapping[str, Any]] | None = None,
        approvals: ApprovalStore | None = None,
        *,
        origin: str = "config",
        protected: Mapping[str, Mapping[str, Action]] | None = None,
    ) -> None:
        """`origin` names where the rules came from, in rule descriptions.

        `protected` adds to the built-in protected rules (PROTECTED_PERMISSIONS),
        e.g. the config file's own path and the state dir when they lie in a root.
        """
        self.approvals = approvals if approvals is not None else ApprovalStore(None)
        self._protected: dict[str, dict[str, Action]] = {
            perm: dict(rules) for perm, rules in PROTECTED_PERMISSIONS.items()
        }
        for perm, rules in (protected or {}).items():
            self._protected.setdefault(perm, {}).update(rules)
        self._layers: list[tuple[str | None, Mapping[str, Any], str]] = [
            (None, DEFAULT_PERMISSIONS, "default"),
            (None, _checked(permissions or {}, "[permissions]"), origin),
        ]
        self._users = {
            uid: _checked(perms, rules_section(uid)) for uid, perms in (users or {}).items()
        }
        self._origin = origin
        self._cache: dict[tuple[str, str], _Compiled] = {}
        self._cache_version = self.approvals.version

    @classmethod
    def from_config(
        cls,
        config: Config,
        approvals: ApprovalStore | None = None,
        *,
        protected: Mapping[str, Mapping[str, Action]] | None = None,
    ) -> Policy:
        users = {uid: user.permissions for uid, user in config.users.items()}
        return cls(
            config.permissions,
            users,
            approvals,
            origin=config.source or "config",
            protected=protected,
        )

    # -- evaluation

    def evaluate(self, user_id: str, permission: str, subject: str | None = None) -> Decision:
        """The action for one subject; `subject=None` is the generic check ("*" rules only).

        The built-in protections are a layer of their own: unless the rule that decided
        names the subject, the stricter of its action and theirs stands, so they only
        ever narrow (their own allows, like `*.env.example`, only lift their own asks).
        """
        compiled = self._compiled(user_id, permission)
        if subject is None:
            fallback = compiled[3]
            return Decision(fallback[0], permission, None, fallback[1])
        action, rule = _decide(compiled, subject)
        return Decision(action, permission, subject, rule)

    def subject_filter(
        self, user_id: str, permission: str, keep: Collection[Action]
    ) -> Callable[[str], bool] | None:
        """A test of which subjects get an action in `keep`, or None when every subject does.

        For tools that check thousands of paths (glob, grep): no `Decision` per path,
        and no check at all when no rule could give an action outside `keep`.
        """
        compiled = self._compiled(user_id, permission)
        by_group, fallback, guards = compiled[2], compiled[3], compiled[5]
        guarded = not all(action in keep for action, _ in guards[1:])
        if not guarded and fallback[0] in keep and all(r[0] in keep for r in by_group[1:]):
            return None
        if not guarded and compiled[1] is None:
            kept_otherwise = fallback[0] in keep
            return lambda subject: kept_otherwise
        return lambda subject: _decide(compiled, subject)[0] in keep

    def denies_all(self, user_id: str, permission: str) -> bool:
        """Whether every subject of `permission` is denied to `user_id` (no rule, answer
        or default gives anything else): a tool needing it is not offered to a model."""
        _, _, by_group, fallback, _, _ = self._compiled(user_id, permission)
        return fallback[0] == "deny" and all(rule[0] == "deny" for rule in by_group[1:])

    def check_permission(self, user_id: str, permission: str) -> bool:
        """The Python guide's check: True unless the permission is denied outright."""
        return self.evaluate(user_id, permission).action != "deny"

    async def authorize(
        self,
        user_id: str,
        permission: str,
        subjects: Sequence[str] | None,
        asker: Asker | None,
        *,
        tool: str,
        summary: str = "",
    ) -> None:
        """Return if allowed; ask where a rule says ask; raise PermissionDenied otherwise.

        Every subject is checked before anyone is asked, so a call with one denied
        subject is refused without bothering the user about the others.
        """
        pending = self.check(user_id, permission, subjects, tool=tool)
        if not pending:
            return
        if asker is None:
            raise self._nobody_to_ask(user_id, permission, pending, tool)
        for d in pending:
            suggestion = suggested_rule(permission, d.subject)
            request = PermissionRequest(tool, permission, d.subject, user_id, summary, suggestion)
            try:
                answer = await asker.ask(request)
            except NoPersonAvailable:  # e.g. no web console running: as if no asker
                raise self._nobody_to_ask(user_id, permission, pending, tool) from None
            except Exception as exc:  # a broken asker must fail closed, with a reason
                raise PermissionDenied(
                    f"Could not ask the user to approve {described(d)}: {exc}. Nothing was done.",
                    details=decision_details(d),
                ) from exc
            if answer == "always":
                self.approvals.approve(user_id, permission, d.subject)
            elif answer == "pattern" and suggestion is not None:
                self.approvals.approve(user_id, permission, suggestion, pattern=True)
            elif answer != "once":
                raise PermissionDenied(
                    f"The user declined {described(d)} for {tool}. Do not retry it; ask the "
                    "user what to do instead.",
                    details=decision_details(d),
                )

    def check(
        self, user_id: str, permission: str, subjects: Sequence[str] | None, *, tool: str
    ) -> list[Decision]:
        """`authorize` without the asking: the decisions that ask (none: allowed).

        Raises PermissionDenied when any subject is denied. Synchronous and safe from
        any thread, so the runner decides in the worker that runs a blocking tool.
        """
        # str(): tools may hand over Path objects; the policy compares text.
        targets: list[str | None] = list(dict.fromkeys(map(str, subjects))) if subjects else [None]
        decisions = [self.evaluate(user_id, permission, s) for s in targets]
        for d in decisions:
            if d.action == "deny":
                raise PermissionDenied(denied_message(d, tool), details=decision_details(d))
        return [d for d in decisions if d.action == "ask"]

    def _nobody_to_ask(
        self, user_id: str, permission: str, pending: list[Decision], tool: str
    ) -> PermissionDenied:
        # A rule from the user's own section can only be overridden there.
        in_user_section = any(d.rule.startswith("[users.") for d in pending)
        section_user = user_id if in_user_section else None
        section = self._users.get(user_id, {}) if in_user_section else self._layers[1][1]
        message = no_asker_message(pending, section_user, section.get(permission), tool)
        return PermissionDenied(message, details=decision_details(pending[0]))

    # -- compilation

    def _compiled(self, user_id: str, permission: str) -> _Compiled:
        if self._cache_version != self.approvals.version:
            self._cache.clear()
            self._cache_version = self.approvals.version
        compiled = self._cache.get((user_id, permission))
        return compiled if compiled is not None else self._compile(user_id, permission)

    def _compile(self, user_id: str, permission: str) -> _Compiled:
        rules = self._rules(user_id, permission)
        # One regex for the whole list: alternatives are tried in order, so with
        # the last rule first, the group that matches is the rule that wins. Rules
        # before the last "*" can never win and are left out.
        fallback: _Rule = (
            "ask",
            f"no rule for {quoted(permission)} matched (unmatched asks)",
            False,
        )
        kept: list[tuple[str, _Rule]] = []
        for pattern, action, text, names in reversed(rules):
            if pattern == "*" and not isinstance(pattern, _Literal):
                fallback = (action, text, False)
                break
            kept.append((pattern, (action, text, names)))
        fullmatch = _joined([p for p, _ in kept])
        guard_rules = list(reversed(self._protected_rules(permission)))
        guard = _joined([p for p, _, _ in guard_rules])
        guards = (("deny", ""), *((a, t) for _, a, t in guard_rules))  # groups start at 1
        if len(self._cache) >= self._MAX_CACHED:
            self._cache.clear()
        by_group = (fallback, *(rule for _, rule in kept))
        compiled = (permission.endswith(":file"), fullmatch, by_group, fallback, guard, guards)
        self._cache[(user_id, permission)] = compiled
        return compiled

    def _protected_rules(self, permission: str) -> list[tuple[str, Action, str]]:
        norm = _path_key if permission.endswith(":file") else _identity
        named = "path" if permission.endswith(":file") else "command"
        return [
            (
                norm(pattern),
                action,
                f"built-in protection {quoted(permission)} = {inline_table({pattern: action})} "
                f"(a broad rule does not lift it; a rule naming the {named} does)",
            )
            for pattern, action in self._protected.get(permission, {}).items()
        ]

    def _rules(self, user_id: str, permission: str) -> list[tuple[str, Action, str, bool]]:
        """(pattern, action, description, names its subject) in rule order; a `_Literal`
        matches verbatim. The built-in protections are not among them (`_protected_rules`)."""
        norm = _path_key if permission.endswith(":file") else _identity
        rules: list[tuple[str, Action, str, bool]] = []
        layers = list(self._layers)
        if user_id in self._users:
            layers.append((user_id, self._users[user_id], self._origin))
        for uid, perms, origin in layers:
            spec = perms.get(permission)
            if isinstance(spec, str):
                text = f"{rules_section(uid)} {quoted(permission)} = {quoted(spec)} ({origin})"
                rules.append(("*", cast(Action, spec), text, False))  # _checked: an action
            elif spec is not None:
                for pattern, action in spec.items():
                    entry = inline_table({pattern: action})
                    text = f"{rules_section(uid)} {quoted(permission)} = {entry} ({origin})"
                    rules.append((norm(pattern), action, text, not pattern.startswith("*")))
        where = self.approvals.path or "memory"
        for approval in self.approvals.for_user(user_id):
            if approval.permission != permission:
                continue
            shown = "*" if approval.subject is None else approval.subject
            text = (
                f'"allow always" answer by {quoted(user_id)}: {quoted(permission)} = '
                f"{inline_table({shown: 'allow'})} ({where})"
            )
            # Literal unless the person picked a pattern: an approved `ls *.py` must
            # not approve `ls anything.py`.
            # A pattern stored for a described subject (`(not *`, suggested by older
            # versions) would allow every command not understood: read it verbatim.
            # A person's answer for a subject names it (lifts the protections); one for
            # the whole permission does not.
            if approval.subject is None:
                rules.append(("*", "allow", text, False))
            elif approval.pattern and not exact_only(approval.subject):
                rules.append((norm(approval.subject), "allow", text, True))
            else:
                rules.append((_Literal(norm(approval.subject)), "allow", text, True))
        return rules


_STRICTNESS: dict[str, int] = {"deny": 0, "ask": 1, "allow": 2}


def _decide(compiled: _Compiled, subject: str) -> tuple[Action, str]:
    """The action and rule for one subject (see `Policy.evaluate`); no `Decision` made,
    so `subject_filter` can run it for every path glob and grep list."""
    path_like, fullmatch, by_group, fallback, guard, guards = compiled
    key = _path_key(subject) if path_like else subject
    m = fullmatch(key) if fullmatch is not None else None
    # Every alternative is a group (`_joined`), so a match has a lastindex.
    if m is not None:
        assert m.lastindex is not None
        action, rule, names = by_group[m.lastindex]
    else:
        action, rule, names = fallback
    if not names and guard is not None:
        g = guard(key)
        if g is not None:
            assert g.lastindex is not None
            if _STRICTNESS[guards[g.lastindex][0]] < _STRICTNESS[action]:
                action, rule = guards[g.lastindex]
    return action, rule


def _joined(patterns: Sequence[str]) -> _Match | None:
    """One fullmatch for all `patterns`, its `lastindex` the first that matched."""
    if not patterns:
        return None
    source = "|".join(f"({_pattern_regex(p)})" for p in patterns)
    compiled: list[re.Pattern[str]] = []

    def fullmatch(subject: str) -> re.Match[str] | None:
        # Compiled with the first subject: a listing asks only `denies_all`, which
        # reads the rules, not the regex (~30 ms of a server's start).
        if not compiled:
            compiled.append(re.compile(source, re.DOTALL))
        return compiled[0].fullmatch(subject)

    return _bounded(fullmatch, patterns)


def _identity(text: str) -> str:
    return text


def _path_key(path: str) -> str:
    """The form path subjects and patterns are compared in."""
    if os.sep == "\\":
        path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lower() if _CASELESS_PATHS else path


def _checked(perms: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """Validate rules given directly to Policy (Config has already validated its own)."""
    for permission, spec in perms.items():
        entries = {"*": spec} if isinstance(spec, str) else spec
        if not isinstance(entries, Mapping):
            raise ValueError(f"{where} {quoted(permission)}: must be an action or a table")
        for pattern, action in entries.items():
            if action not in _ACTIONS:
                raise ValueError(
                    f"{where} {quoted(permission)} {quoted(str(pattern))}: action must be "
                    f"'allow', 'deny' or 'ask', got {action!r}"
                )
    return perms


# --- the Python guide's module-level check ---------------------------------------

_default_policy: Policy | None = None


def check_permission(user_id: str, permission: str) -> bool:
    """True unless `permission` is denied for `user_id` under the built-in defaults."""
    global _default_policy
    if _default_policy is None:
        _default_policy = Policy()
    return _default_policy.check_permission(user_id, permission)
