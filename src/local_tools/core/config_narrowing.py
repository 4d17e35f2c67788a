"""What an untrusted workspace's own `local-tools.toml` may still set: only what narrows.

Until the user trusts a workspace (core/trust.py), its config file is read and validated
(a typo still fails loudly) but only settings that can make local-tools stricter than
the defaults are kept:

- permission rules whose action is `deny` or `ask` (the built-in defaults deny nothing,
  so an `ask` can only take a decision back to the person), in `[permissions]` and
  `[users.*.permissions]`;
- `[toolsets] enabled` / `disabled` (the default enables everything), `profile` and
  `[profiles]` (they decide what is listed to a model, never what it may do);
- `[sandbox] mode` other than "off", `network = false`, a `deny_read` that keeps every
  default entry, an empty `allow_read`;
- `[limits]` and `[browser] max_download_mb` no larger than the defaults;
- `[network] respect_robots = true`;
- `[deploy] protected` (only adds), `extensions` and `[http] allowed_origins` that are
  subsets of the defaults;
- `[review] timeout` (a person's wait, not a grant);
- `[lsp] enabled = false` and its waits and sizes (never a `[lsp.NAME]` server: that
  names a command to run);
- `[checkpoints] enabled = true` (a workspace cannot take the user's undo away).

Everything else (roots, allow rules, the network and search settings, the browser's
executable, the knowledge store's URL, any key added later and not listed here) is
ignored, and named so `doctor`, `list` and the servers can say what was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from local_tools.core.config import Config

__all__ = ["narrowing_only"]


def _at_most(value: Any, default: Any) -> bool:
    return bool(value <= default)


def _subset(value: Any, default: Any) -> bool:
    return set(value) <= set(default)


def _superset(value: Any, default: Any) -> bool:
    return set(value) >= set(default)


def _always(value: Any, default: Any) -> bool:
    return True


# (section, key) -> does this value only narrow, given the default?
_NARROWING: dict[tuple[str, str], Callable[[Any, Any], bool]] = {
    ("toolsets", "enabled"): _always,
    ("toolsets", "disabled"): _always,
    ("toolsets", "profile"): _always,  # what is listed, never what is allowed
    ("sandbox", "mode"): lambda value, default: value != "off",
    ("sandbox", "network"): lambda value, default: value is False,
    ("sandbox", "deny_read"): _superset,  # hides at least what the defaults hide
    ("sandbox", "allow_read"): lambda value, default: not value,
    ("limits", "max_output_lines"): _at_most,
    ("limits", "max_output_bytes"): _at_most,
    ("limits", "exec_timeout"): _at_most,
    ("limits", "max_processes"): _at_most,
    ("browser", "max_download_mb"): _at_most,
    ("network", "respect_robots"): lambda value, default: value is True,
    ("deploy", "protected"): _always,
    ("deploy", "extensions"): _subset,
    ("http", "allowed_origins"): _subset,
    ("review", "timeout"): _always,
    # How long to wait for a language server, how many files it keeps open: no grant.
    # `[lsp.NAME]` names a command to run: never from an untrusted file.
    ("lsp", "enabled"): lambda value, default: value is False,
    ("lsp", "wait"): _always,
    ("lsp", "start_timeout"): _always,
    ("lsp", "request_timeout"): _always,
    ("lsp", "idle_timeout"): _always,
    ("lsp", "max_open_documents"): _always,
    # Checkpoints make changes undoable: a workspace may not turn them off for the user.
    ("checkpoints", "enabled"): lambda value, default: value is True,
}
_NARROWING_ACTIONS = ("deny", "ask")


def narrowing_only(config: Config) -> tuple[dict[str, Any], list[str]]:
    """The settings of `config` (as a dict to build a Config from) that only narrow, and
    a readable line for each setting left out."""
    kept: dict[str, Any] = {}
    ignored: list[str] = []
    for name in sorted(config.model_fields_set):
        value = getattr(config, name)
        if name == "permissions":
            kept[name] = _rules(value, "permissions", ignored)
        elif name == "users":
            kept[name] = {
                uid: {"permissions": _rules(user.permissions, f"users.{uid}.permissions", ignored)}
                for uid, user in value.items()
            }
        elif name == "profiles":  # listing only: a profile grants nothing
            kept[name] = {n: p.model_dump() for n, p in value.items()}
        elif isinstance(value, BaseModel):
            kept[name] = _section(name, value, ignored)
        else:  # pragma: no cover - every top-level key is a section or a rule table
            ignored.append(name)
    return kept, ignored


def _section(name: str, section: BaseModel, ignored: list[str]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    defaults = type(section)()
    for key in sorted(section.model_fields_set):
        value = getattr(section, key)
        default = getattr(defaults, key)
        check = _NARROWING.get((name, key))
        if (name, key) == ("lsp", "servers"):  # [lsp.NAME] tables: each names a command
            for server, table in value.items():
                command = f" (command {_show(table.command)})" if table.command else ""
                ignored.append(f"lsp.{server}{command}")
        elif isinstance(value, BaseModel) and check is None:  # e.g. [network.search]
            inner: list[str] = []
            _section(f"{name}.{key}", value, inner)
            ignored += inner or [f"{name}.{key}"]
        elif check is not None and check(value, default):
            kept[key] = value.model_dump() if isinstance(value, BaseModel) else value
        else:
            ignored.append(f"{name}.{key} = {_show(value)}")
    return kept


def _rules(perms: Mapping[str, Any], where: str, ignored: list[str]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for permission, spec in perms.items():
        table = {"*": spec} if isinstance(spec, str) else dict(spec)
        narrowing = {p: a for p, a in table.items() if a in _NARROWING_ACTIONS}
        for pattern, action in table.items():
            if action not in _NARROWING_ACTIONS:
                ignored.append(f'{where}."{permission}" = {{ "{pattern}" = "{action}" }}')
        if narrowing:
            kept[permission] = narrowing
    return kept


def _show(value: Any) -> str:
    if isinstance(value, (str, PurePath)):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)
