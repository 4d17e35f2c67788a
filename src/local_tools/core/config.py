"""`local-tools.toml`: the configuration models and how they are loaded (DESIGN §4).

Every key is optional and unknown keys are errors: a typo such as `sandbox.mod`
must fail loudly rather than silently leave the safe default in place. Errors name
the key path and the file, so a user can fix them without reading this module.

Where the config comes from (`load_config`): an explicit dict or path; otherwise
`$LOCAL_TOOLS_CONFIG`; otherwise `<workspace>/local-tools.toml`; otherwise defaults.
Built-in permission defaults live in `security/defaults.py`; `permissions` here holds
only what the user wrote, applied after them.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

__all__ = [
    "CONFIG_ENV",
    "CONFIG_FILENAME",
    "DEPLOY_EXTENSIONS",
    "KNOWN_PERMISSIONS",
    "Action",
    "BrowserConfig",
    "Config",
    "ConfigError",
    "DeployConfig",
    "HttpConfig",
    "KnowledgeConfig",
    "LimitsConfig",
    "NetworkConfig",
    "PermissionSpec",
    "ReviewConfig",
    "SandboxConfig",
    "SearchConfig",
    "ToolsetsConfig",
    "UserConfig",
    "WorkspaceConfig",
    "default_config_toml",
    "load_config",
]

CONFIG_ENV = "LOCAL_TOOLS_CONFIG"
CONFIG_FILENAME = "local-tools.toml"

Action = Literal["allow", "deny", "ask"]

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
# Tags of the action-or-table union; stripped from error paths shown to users.
_ACTION_TAG = "__action__"
_TABLE_TAG = "__table__"


class ConfigError(ValueError):
    """The configuration is unreadable or invalid; the message names key and file."""

    def __init__(self, problems: list[str] | str, *, source: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        where = f"{source}: " if source else ""
        if len(self.problems) == 1:
            message = f"{where}{self.problems[0]}"
        else:
            listed = "\n".join(f"  - {p}" for p in self.problems)
            message = f"{where}{len(self.problems)} problems:\n{listed}"
        super().__init__(message)


# --- field types -----------------------------------------------------------------


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


def _spec_kind(value: Any) -> str:
    return _TABLE_TAG if isinstance(value, Mapping) else _ACTION_TAG


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


PermissionName = Annotated[str, AfterValidator(_check_permission_name)]
Pattern = Annotated[str, AfterValidator(_check_pattern)]
PatternTable = dict[Pattern, Action]
# `action` or `{ pattern = action }`; a plain action means `{ "*" = action }`.
PermissionSpec = Annotated[
    Annotated[Action, Tag(_ACTION_TAG)] | Annotated[PatternTable, Tag(_TABLE_TAG)],
    Discriminator(_spec_kind),
]
Permissions = dict[PermissionName, PermissionSpec]
RootPath = Annotated[Path, BeforeValidator(_non_empty_path)]
Name = Annotated[str, AfterValidator(_check_non_empty)]
PositiveInt = Annotated[int, Field(gt=0, strict=True)]


# --- models ----------------------------------------------------------------------


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkspaceConfig(_Section):
    root: RootPath = Path(".")
    extra_roots: list[RootPath] = Field(default_factory=list)  # read-only
    writable_roots: list[RootPath] = Field(default_factory=list)


class UserConfig(_Section):
    permissions: Permissions = Field(default_factory=dict)


class SandboxConfig(_Section):
    mode: Literal["off", "read-only", "workspace-write"] = "workspace-write"
    network: Annotated[bool, Field(strict=True)] = False


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


HttpUrl = Annotated[str, AfterValidator(_check_http_url)]

SEARCH_PROVIDERS = ("searxng", "brave", "tavily", "exa")


class SearchConfig(_Section):
    """`[network.search]`: the web_search provider; its API key comes from the environment."""

    provider: Literal["", "searxng", "brave", "tavily", "exa"] = ""
    url: HttpUrl = ""  # SearXNG: the instance; others: the API endpoint, when not the default
    api_key_env: Annotated[str, AfterValidator(_check_env_name)] = ""  # default per provider


class NetworkConfig(_Section):
    allow_private: list[Annotated[str, AfterValidator(_check_private_entry)]] = Field(
        default_factory=list
    )
    respect_robots: Annotated[bool, Field(strict=True)] = False
    user_agent: Annotated[str, AfterValidator(_check_header_value)] = ""  # "": local-tools/VERSION
    proxy: HttpUrl = ""  # environment proxies are never used; this one is
    search: SearchConfig = Field(default_factory=SearchConfig)


class BrowserConfig(_Section):
    """`[browser]`: the Chromium the browser tools drive (Playwright's own download is
    never used)."""

    executable: str = ""  # "": /usr/bin/chromium, else chromium or chrome on PATH
    headless: Annotated[bool, Field(strict=True)] = True
    # Where a page's downloads land: a workspace folder (written through the jail).
    downloads: Annotated[str, Field(min_length=1, max_length=1024)] = "downloads"
    max_download_mb: PositiveInt = 100  # a bigger download is cancelled


def _check_postgres_url(value: str) -> str:
    if value and not re.fullmatch(r"postgres(ql)?://\S*", value):
        raise ValueError('must be a "postgresql://user@host:port/dbname" URL (or empty)')
    return value


def _check_identifier(value: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", value):
        raise ValueError("must be a lowercase SQL name: letters, digits and '_' (at most 63)")
    return value


class KnowledgeConfig(_Section):
    """`[knowledge]`: where the memory and project tools keep their store."""

    # "": one SQLite file per workspace in the state folder. A password belongs in
    # PGPASSWORD or ~/.pgpass (libpq reads both), not in a file that may be committed.
    url: Annotated[str, AfterValidator(_check_postgres_url)] = ""
    pg_schema: Annotated[str, AfterValidator(_check_identifier)] = "public"


class ReviewConfig(_Section):
    """`[review]`: how long the review tools wait for the person."""

    # The seed's GUI waits 3000 s; an hour at most, within batch's own limit.
    timeout: Annotated[float, Field(gt=0, le=3600, strict=True, allow_inf_nan=False)] = 3000.0


# The seed's whitelist: web build output, documents, images and fonts.
DEPLOY_EXTENSIONS = (
    ".html", ".htm", ".css", ".js", ".mjs", ".ts", ".tsx", ".json", ".md",
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".ico",
    ".woff", ".woff2", ".ttf", ".otf", ".eot",
)  # fmt: skip


def _check_extension(value: str) -> str:
    if not re.fullmatch(r"\.[A-Za-z0-9][A-Za-z0-9._+-]{0,31}", value):
        raise ValueError('must be a file extension with its dot, such as ".html"')
    return value.lower()


def _check_protected(value: str) -> str:
    if not value.strip() or value.startswith(("/", "\\")) or ".." in value.split("/"):
        raise ValueError('must be a relative path or glob inside the target, such as "CNAME"')
    return value


class DeployConfig(_Section):
    """`[deploy]`: what copy_workspace_to_project copies and never deletes."""

    extensions: list[Annotated[str, AfterValidator(_check_extension)]] = Field(
        default_factory=lambda: list(DEPLOY_EXTENSIONS)
    )
    # Added to the fixed ones (.git/, README.md, local-tools.toml, .local-tools/).
    protected: list[Annotated[str, AfterValidator(_check_protected)]] = Field(default_factory=list)


class LimitsConfig(_Section):
    max_output_lines: PositiveInt = 2000
    max_output_bytes: PositiveInt = 51200
    exec_timeout: Annotated[float, Field(gt=0, le=600, strict=True, allow_inf_nan=False)] = 60.0
    max_processes: PositiveInt = 8  # commands running at once (foreground + background)


class HttpConfig(_Section):
    """`serve http`: web origins (besides its own console) allowed to call it."""

    allowed_origins: list[Annotated[str, AfterValidator(_check_origin)]] = Field(
        default_factory=lambda: ["chrome-extension://*", "moz-extension://*"]
    )


class ToolsetsConfig(_Section):
    enabled: Annotated[list[Name], BeforeValidator(_one_or_many)] = Field(
        default_factory=lambda: ["*"]
    )
    disabled: Annotated[list[Name], BeforeValidator(_one_or_many)] = Field(default_factory=list)


class Config(_Section):
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    permissions: Permissions = Field(default_factory=dict)
    users: dict[Name, UserConfig] = Field(default_factory=dict)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    browser: BrowserConfig = Field(default_factory=BrowserConfig)
    knowledge: KnowledgeConfig = Field(default_factory=KnowledgeConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    deploy: DeployConfig = Field(default_factory=DeployConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    toolsets: ToolsetsConfig = Field(default_factory=ToolsetsConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)

    # Not a TOML key: where this config came from (a file path, "<dict>", or None).
    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        return self._source


# --- loading ---------------------------------------------------------------------


def load_config(
    source: Mapping[str, Any] | str | os.PathLike[str] | Config | None,
    workspace: str | os.PathLike[str],
) -> Config:
    """Load, validate and resolve a config.

    `None` looks for `$LOCAL_TOOLS_CONFIG`, then `<workspace>/local-tools.toml`,
    then falls back to defaults. Relative roots resolve against the config file's
    directory (the workspace for dicts and defaults); an unset `workspace.root`
    is the workspace itself, wherever the file lives.
    """
    ws = Path(workspace).expanduser().resolve()
    if isinstance(source, Config):
        return source
    if isinstance(source, Mapping):
        return _build(dict(source), label="<dict>", base=ws, workspace=ws)
    if source is None:
        env = os.environ.get(CONFIG_ENV)
        if env:
            path = Path(env).expanduser()
            return _load_file(path, ws, label=f"{path} (from ${CONFIG_ENV})")
        candidate = ws / CONFIG_FILENAME
        if not candidate.exists():
            return _build({}, label=None, base=ws, workspace=ws)
        return _load_file(candidate, ws)
    if isinstance(source, (str, os.PathLike)):
        return _load_file(Path(source).expanduser(), ws)
    raise TypeError(f"config must be None, a dict or a path, not {type(source).__name__}")


def _load_file(path: Path, workspace: Path, label: str | None = None) -> Config:
    label = label or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("config file not found", source=label) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a TOML file", source=label) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason})", source=label) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", source=label) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", source=label) from None
    config = _build(data, label=label, base=path.resolve().parent, workspace=workspace)
    config._source = str(path)  # the plain path, without the env-var note
    return config


def _build(data: dict[str, Any], *, label: str | None, base: Path, workspace: Path) -> Config:
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(err) for err in exc.errors()]
        raise ConfigError(problems, source=label or "<defaults>") from None
    ws = config.workspace
    root = _resolve(ws.root, base) if "root" in ws.model_fields_set else workspace
    resolved = ws.model_copy(
        update={
            "root": root,
            "extra_roots": [_resolve(p, base) for p in ws.extra_roots],
            "writable_roots": [_resolve(p, base) for p in ws.writable_roots],
        }
    )
    config = config.model_copy(update={"workspace": resolved})
    config._source = label
    return config


def _resolve(path: Path, base: Path) -> Path:
    return (base / path.expanduser()).resolve()


# --- error messages --------------------------------------------------------------

_TYPE_MESSAGES = {
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "finite_number": "must be a finite number",
    "path_type": "must be a path string",
}


def _describe(err: Mapping[str, Any]) -> str:
    loc = [p for p in err["loc"] if p not in (_ACTION_TAG, _TABLE_TAG)]
    is_key = bool(loc) and loc[-1] == "[key]"
    if is_key:
        loc = loc[:-1]
    path = _key_path(loc)
    kind = err["type"]
    value = _short(err.get("input"))
    if kind == "extra_forbidden":
        hint = ""
        siblings = _field_names(loc[:-1])
        close = _close_matches(str(loc[-1]), siblings)
        if close:
            hint = f" (did you mean '{close[0]}'?)"
        elif siblings:
            hint = f" (expected one of: {', '.join(siblings)})"
        return f"unknown key '{path}'{hint}"
    if kind == "value_error":
        message = str(err["msg"]).removeprefix("Value error, ")
        return f"{path}: {message}" + ("" if is_key else f", got {value}")
    if kind == "literal_error":
        message = f"must be {err['ctx']['expected']}"
        if _ACTION_TAG in err["loc"]:
            message += " (or a table of pattern = action)"
    elif kind == "greater_than":
        bound = err["ctx"]["gt"]
        message = f"must be > {int(bound) if float(bound).is_integer() else bound}"
    else:
        message = _TYPE_MESSAGES.get(kind, str(err["msg"]))
    return f"{path}: {message}, got {value}"


def _close_matches(key: str, options: list[str]) -> list[str]:
    close = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
    # A truncated name ("allow" for "allow_private") scores low but is a clear miss.
    return close or [o for o in options if len(key) >= 4 and o.startswith(key)][:1]


def _key_path(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        key = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
        out += f".{key}" if out else key
    return out or "<top level>"


def _field_names(loc: list[Any]) -> list[str]:
    """Valid keys of the table at `loc`, for "did you mean" hints."""
    current: Any = Config
    parts = list(loc)
    while parts:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(parts.pop(0)))
            if field is None:
                return []
            current = field.annotation
        elif get_origin(current) is dict:
            parts.pop(0)  # a user id or permission name: any key is fine
            current = get_args(current)[1]
        else:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _short(value: Any, limit: int = 60) -> str:
    """The offending value, spelled the way TOML would (true, "text", [1])."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # circular structures from a Python dict
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- `local-tools init` ----------------------------------------------------------

_TEMPLATE = """\
# local-tools configuration. Every key is optional: the values below are the
# defaults, and commented lines show what you can add. Docs: DESIGN.md §4.

[workspace]
# root = "."                  # the jail; default: the workspace (--workspace or the
#                             # current directory); relative paths resolve against
#                             # this file's directory
extra_roots = []              # more allowed roots, read-only
writable_roots = []           # more allowed roots, writable

[permissions]
# permission = action | { pattern = action }; action is "allow", "deny" or "ask".
# Patterns: * any text, ? one character, matched against the whole subject;
# a trailing " *" is optional ("ls *" also matches bare "ls"). The last matching
# rule wins, and these rules come after the built-in defaults:
#   read:file = allow (but .env-style files ask), write:file = allow (.git/ asks),
#   delete:file = ask, network:outbound = ask, skill = allow,
#   execute:command = ask, except read-only commands (ls, cat, git status, rg, ...).
# Subjects: the workspace-relative path for *:file, each simple command for
# execute:command, the host for network:outbound, the skill's name for skill.
#
# "delete:file" = { "build/*" = "allow" }
# "execute:command" = { "git status*" = "allow", "pytest *" = "allow", "rm -rf *" = "deny" }
# "network:outbound" = { "*.python.org" = "allow" }

# Per-user rules, applied after [permissions]:
# [users.alice.permissions]
# "execute:command" = "deny"

[sandbox]                     # how exec_cmd confines commands (bubblewrap or Landlock)
mode = "workspace-write"      # off | read-only | workspace-write (roots + $TMPDIR)
network = false               # may sandboxed commands use the network

[network]                     # web_fetch, http_request, web_search
allow_private = []            # hosts or CIDRs exempt from the private-address guard,
#                             # e.g. ["localhost", "10.0.0.0/8"]; the default refuses
#                             # loopback, the LAN, link-local/metadata and the like
respect_robots = false        # web_fetch honours robots.txt when true
user_agent = ""               # "": local-tools/VERSION (an LLM agent's web tool; ...)
proxy = ""                    # an http(s) proxy for web tools; environment proxies are ignored

[network.search]              # web_search; the API key is read from the environment
provider = ""                 # searxng | brave | tavily | exa ("": web_search is unavailable)
url = ""                      # searxng: your instance, e.g. "http://127.0.0.1:8888";
#                             # others: the API endpoint when not the public one
api_key_env = ""              # "": BRAVE_API_KEY, TAVILY_API_KEY or EXA_API_KEY

[browser]                     # the browser_* tools (Playwright driving Chromium)
executable = ""               # "": /usr/bin/chromium, else chromium or chrome on PATH
headless = true               # false: a visible window (needs a display)
downloads = "downloads"       # the workspace folder a page's downloads land in
max_download_mb = 100         # a bigger download is cancelled

[knowledge]                   # the memory and project tools' store
url = ""                      # "": a SQLite file per workspace in the state folder;
#                             # "postgresql://user@host:5432/dbname": one database a team
#                             # shares (password from PGPASSWORD or ~/.pgpass, not here)
pg_schema = "public"          # PostgreSQL: the schema holding the tables (one per project)

[review]                      # review_* tools: the person passes, edits or comments
timeout = 3000                # seconds to wait for the answer; then the call is CANCELLED

[deploy]                      # copy_workspace_to_project
# Extensions copied (the default: web pages, styles, scripts, JSON, Markdown, images
# and fonts); anything else, source maps included, is reported and left out.
# extensions = [".html", ".css", ".js", ".json", ".md", ".png", ".woff2"]
protected = []                # target paths never deleted, besides .git/, README.md,
#                             # local-tools.toml and .local-tools/; globs, e.g. ["CNAME"]

[limits]
max_output_lines = 2000
max_output_bytes = 51200
exec_timeout = 60             # seconds, a command's default timeout (at most 600)
max_processes = 8             # commands running at once, background ones included

[toolsets]
enabled = ["*"]               # or names: files, search, shell, web, agent, memory, ...
disabled = []                 # toolsets to leave out even when enabled matches

[http]                        # `local-tools serve http` (the openlink extension, the console)
# Browser origins allowed to call it besides its own console page; * matches any text.
allowed_origins = ["chrome-extension://*", "moz-extension://*"]
"""


def default_config_toml() -> str:
    """A commented `local-tools.toml` that loads back to the defaults."""
    return _TEMPLATE
