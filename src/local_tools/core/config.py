"""`local-tools.toml`: the configuration models and how they are loaded (DESIGN §4).

Every key is optional and unknown keys are errors: a typo such as `sandbox.mod`
must fail loudly rather than silently leave the safe default in place. Errors name
the key path and the file, so a user can fix them without reading this module.

Where the config comes from (`load_config`): an explicit dict or path; otherwise
`$LOCAL_TOOLS_CONFIG`; otherwise `<workspace>/local-tools.toml`; otherwise defaults.
The first two are the user's own and apply in full. The workspace's file applies in
full only once the user trusts the workspace (core/trust.py); until then only its
settings that narrow do (core/config_narrowing.py), and the rest is listed in
`Config.ignored`.
Built-in permission defaults live in `security/defaults.py`; `permissions` here holds
only what the user wrote, applied after them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

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
    model_validator,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

from local_tools.core.config_checks import (
    KNOWN_PERMISSIONS,
    _check_env_name,
    _check_extension,
    _check_header_value,
    _check_http_url,
    _check_identifier,
    _check_origin,
    _check_pattern,
    _check_permission_name,
    _check_postgres_url,
    _check_private_entry,
    _check_protected,
    _non_empty_path,
)
from local_tools.core.config_engines import (
    CheckpointsConfig,
    LspConfig,
    LspServerConfig,
    Name,
    PositiveInt,
)
from local_tools.core.config_errors import ACTION_TAG, TABLE_TAG, describe
from local_tools.core.config_models import CompactConfig, ModelConfig, TaskConfig
from local_tools.core.profiles import DEFAULT_PROFILE, UnknownProfile, resolve_profile
from local_tools.core.trust import Trust

__all__ = [
    "CONFIG_ENV",
    "CONFIG_FILENAME",
    "DEPLOY_EXTENSIONS",
    "KNOWN_PERMISSIONS",
    "Action",
    "BrowserConfig",
    "CheckpointsConfig",
    "Config",
    "ConfigError",
    "DeployConfig",
    "HttpConfig",
    "KnowledgeConfig",
    "LimitsConfig",
    "LspConfig",
    "LspServerConfig",
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


def _spec_kind(value: Any) -> str:
    return TABLE_TAG if isinstance(value, Mapping) else ACTION_TAG


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


PermissionName = Annotated[str, AfterValidator(_check_permission_name)]
Pattern = Annotated[str, AfterValidator(_check_pattern)]
PatternTable = dict[Pattern, Action]
# `action` or `{ pattern = action }`; a plain action means `{ "*" = action }`.
PermissionSpec = Annotated[
    Annotated[Action, Tag(ACTION_TAG)] | Annotated[PatternTable, Tag(TABLE_TAG)],
    Discriminator(_spec_kind),
]
Permissions = dict[PermissionName, PermissionSpec]
RootPath = Annotated[Path, BeforeValidator(_non_empty_path)]


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
    # Paths hidden from commands besides the built-in credential stores (~ expanded),
    # and paths to un-hide (a built-in entry, or one of deny_read).
    deny_read: list[str] = Field(default_factory=list)
    allow_read: list[str] = Field(default_factory=list)


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


class DeployConfig(_Section):
    """`[deploy]`: what copy_workspace_to_project copies and never deletes."""

    extensions: list[Annotated[str, AfterValidator(_check_extension)]] = Field(
        default_factory=lambda: list(DEPLOY_EXTENSIONS)
    )
    # Added to the fixed ones (.git/, README.md, local-tools.toml, config.toml, .local-tools/).
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
    # What is listed to a model (core/profiles.py); `--profile` overrides it.
    profile: Name = DEFAULT_PROFILE


class ProfileConfig(_Section):
    """`[profiles.NAME]`: toolsets, tool names, globs and other profiles to list."""

    tools: Annotated[list[Name], BeforeValidator(_one_or_many)]
    description: str = ""


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
    profiles: dict[Name, ProfileConfig] = Field(default_factory=dict)
    lsp: LspConfig = Field(default_factory=LspConfig)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)
    models: dict[Name, ModelConfig] = Field(default_factory=dict)
    task: TaskConfig = Field(default_factory=TaskConfig)
    compact: CompactConfig = Field(default_factory=CompactConfig)

    @model_validator(mode="after")
    def _profile_known(self) -> Config:
        entries = self.profile_entries()
        for name in entries:  # each is checked: find_tools resolves them all
            try:
                resolve_profile(name, entries)
            except UnknownProfile as exc:
                raise ValueError(f"profiles.{name}: {exc}") from None
        try:
            resolve_profile(self.toolsets.profile, entries)
        except UnknownProfile as exc:
            raise ValueError(f"toolsets.profile: {exc}") from None
        return self

    @model_validator(mode="after")
    def _models_known(self) -> Config:
        named = [("task.model", self.task.model), ("compact.model", self.compact.model)]
        named += [(f"task.agents.{a}.model", c.model) for a, c in self.task.agents.items()]
        for key, model in named:
            if model and model not in self.models:
                known = ", ".join(sorted(self.models)) or "none is configured"
                raise ValueError(f"{key}: no [models.{model}] table ({known})")
        return self

    def profile_entries(self) -> dict[str, list[str]]:
        """`[profiles]` as core/profiles.py reads it: name -> entries."""
        return {name: list(p.tools) for name, p in self.profiles.items()}

    # Not a TOML key: where this config came from (a file path, "<dict>", or None).
    _source: str | None = PrivateAttr(default=None)
    # Not TOML keys: the untrusted workspace file whose widening settings were left
    # out, and a line for each of them.
    _untrusted_file: str | None = PrivateAttr(default=None)
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @property
    def source(self) -> str | None:
        return self._source

    @property
    def untrusted_file(self) -> str | None:
        """The workspace's own config file when it was applied only in part (untrusted)."""
        return self._untrusted_file

    @property
    def ignored(self) -> tuple[str, ...]:
        """The settings of the untrusted workspace file that were not applied."""
        return self._ignored


# --- loading ---------------------------------------------------------------------


def load_config(
    source: Mapping[str, Any] | str | os.PathLike[str] | Config | None,
    workspace: str | os.PathLike[str],
    *,
    trust: Trust | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> Config:
    """Load, validate and resolve a config.

    `None` looks for `$LOCAL_TOOLS_CONFIG`, then `<workspace>/local-tools.toml`,
    then falls back to defaults. Relative roots resolve against the config file's
    directory (the workspace for dicts and defaults); an unset `workspace.root`
    is the workspace itself, wherever the file lives.

    `trust` decides whether the workspace's own file applies in full: True (the caller
    vouches), False, or the trusted hashes (core/trust.py); None reads the trust store
    of `state_dir` (default: the user's state dir). An explicit source and
    `$LOCAL_TOOLS_CONFIG` are the user's own and always apply in full.
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
        return _load_workspace_file(candidate, ws, trust, state_dir)
    if isinstance(source, (str, os.PathLike)):
        return _load_file(Path(source).expanduser(), ws)
    raise TypeError(f"config must be None, a dict or a path, not {type(source).__name__}")


def _load_workspace_file(
    path: Path, workspace: Path, trust: Trust | None, state_dir: str | os.PathLike[str] | None
) -> Config:
    """The workspace's own file: in full when trusted, else only what narrows."""
    from local_tools.core import trust as trust_store
    from local_tools.core.config_narrowing import narrowing_only

    data = _read_bytes(path, str(path))
    if trust is None:
        from local_tools.core.state import default_state_dir

        trust = trust_store.stored_trust(workspace, state_dir or default_state_dir())
    trusted = trust is True or (
        isinstance(trust, Mapping)
        and trust.get(trust_store.WORKSPACE_CONFIG) == trust_store.digest(data)
    )
    parsed = _toml(data, str(path))
    config = _build(parsed, label=str(path), base=path.resolve().parent, workspace=workspace)
    config._source = str(path)
    if trusted:
        return config
    kept, ignored = narrowing_only(Config.model_validate(parsed))  # as written, unresolved
    narrowed = _build(kept, label=str(path), base=path.resolve().parent, workspace=workspace)
    narrowed._source = str(path)
    narrowed._untrusted_file = str(path)
    narrowed._ignored = tuple(ignored)
    return narrowed


def _read_bytes(path: Path, label: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("config file not found", source=label) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a TOML file", source=label) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", source=label) from None


def _toml(data: bytes, label: str) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason})", source=label) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", source=label) from None


def _load_file(path: Path, workspace: Path, label: str | None = None) -> Config:
    label = label or str(path)
    data = _toml(_read_bytes(path, label), label)
    config = _build(data, label=label, base=path.resolve().parent, workspace=workspace)
    config._source = str(path)  # the plain path, without the env-var note
    return config


def _build(data: dict[str, Any], *, label: str | None, base: Path, workspace: Path) -> Config:
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = [_as_written(describe(err, Config)) for err in exc.errors()]
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


def _as_written(problem: str) -> str:
    """`[lsp.NAME]` tables are validated under `lsp.servers`: name them as written."""
    return problem.replace("lsp.servers.", "lsp.")


def _resolve(path: Path, base: Path) -> Path:
    return (base / path.expanduser()).resolve()


# --- `local-tools init` ----------------------------------------------------------


def default_config_toml() -> str:
    """A commented `local-tools.toml` that loads back to the defaults."""
    from local_tools.core.config_template import TEMPLATE  # only `init` needs the text

    return TEMPLATE
