"""Field checks of `local-tools.toml`: the validators its models attach to fields.

Each takes the value as parsed and returns it (maybe normalized) or raises
ValueError with a message for the user; pydantic adds the key path and `config`
the file. Kept apart from the models so `config` reads as the schema itself.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Any

# Permissions the built-in tools use. Others are accepted (plugins may declare
# their own), but a near miss of one of these is a typo and an error.
KNOWN_PERMISSIONS = (
    "read:file",
    "write:file",
    "delete:file",
    "execute:command",
    "network:outbound",
    "external:file",
    "skill",  # the subject is the skill's name
    "browser:evaluate",  # browser_evaluate: the subject is the page's host
    "system:screenshot",  # screenshot: the subject is "monitor N"
    "read:project",  # the knowledge store's project data (requirements, tasks, ...)
    "write:project",
    "deploy",  # copy_workspace_to_project's real run: the subject is the target folder
)

_PERMISSION_RE = re.compile(r"[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+")


def _check_permission_name(name: str) -> str:
    if name not in KNOWN_PERMISSIONS and not _PERMISSION_RE.fullmatch(name):
        raise ValueError("a permission looks like 'verb:object', e.g. 'read:file'")
    if name not in KNOWN_PERMISSIONS:
        close = difflib.get_close_matches(name, KNOWN_PERMISSIONS, n=1, cutoff=0.75)
        if close:
            raise ValueError(f"unknown permission (did you mean '{close[0]}'?)")
    return name


def _check_pattern(pattern: str) -> str:
    if not pattern:
        raise ValueError('a pattern must not be empty; use "*" for anything')
    return pattern


def _check_non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _non_empty_path(value: Any) -> Any:
    # Path("") is ".", which would silently mean "the config dir".
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be empty")
    return value


def _check_private_entry(value: str) -> str:
    value = _check_non_empty(value)
    if "/" in value:  # a CIDR; hosts and single addresses are checked when used
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as exc:
            raise ValueError(f"not a valid CIDR ({exc})") from None
    return value


# An origin as browsers send it: scheme://host[:port], no path; `*` matches any text.
_ORIGIN_RE = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s]+")


def _check_origin(value: str) -> str:
    if not _ORIGIN_RE.fullmatch(value):
        raise ValueError(
            "an origin looks like 'chrome-extension://*' or 'http://127.0.0.1:8080' "
            "(scheme://host[:port], lowercase scheme, no path; * matches any text)"
        )
    return value


def _check_http_url(value: str) -> str:
    if value and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", value):
        raise ValueError("must be an http:// or https:// URL (or empty)")
    return value


def _check_env_name(value: str) -> str:
    if value and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise ValueError("must be the name of an environment variable, such as BRAVE_API_KEY")
    return value


def _check_header_value(value: str) -> str:
    if any(c in value for c in "\r\n"):
        raise ValueError("must be one line")
    return value


def _check_postgres_url(value: str) -> str:
    if value and not re.fullmatch(r"postgres(ql)?://\S*", value):
        raise ValueError('must be a "postgresql://user@host:port/dbname" URL (or empty)')
    return value


def _check_identifier(value: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", value):
        raise ValueError("must be a lowercase SQL name: letters, digits and '_' (at most 63)")
    return value


def _check_extension(value: str) -> str:
    if not re.fullmatch(r"\.[A-Za-z0-9][A-Za-z0-9._+-]{0,31}", value):
        raise ValueError('must be a file extension with its dot, such as ".html"')
    return value.lower()


def _check_protected(value: str) -> str:
    if not value.strip() or value.startswith(("/", "\\")) or ".." in value.split("/"):
        raise ValueError('must be a relative path or glob inside the target, such as "CNAME"')
    return value
