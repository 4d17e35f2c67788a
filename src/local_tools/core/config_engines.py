"""Config sections of the engines: language servers (`[lsp]`) and checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from local_tools.core.config_checks import _check_env_name, _check_extension, _check_non_empty

__all__ = ["CheckpointsConfig", "LspConfig", "LspServerConfig", "Name", "PositiveInt"]

Name = Annotated[str, AfterValidator(_check_non_empty)]
PositiveInt = Annotated[int, Field(gt=0, strict=True)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Seconds = Annotated[float, Field(gt=0, le=3600, strict=True, allow_inf_nan=False)]


class LspServerConfig(_Section):
    """`[lsp.NAME]`: a language server, or changes to a built-in one of that name."""

    command: Annotated[str, AfterValidator(_check_non_empty)] = ""
    args: list[str] = Field(default_factory=list)
    extensions: list[Annotated[str, AfterValidator(_check_extension)]] = Field(default_factory=list)
    root_markers: list[Name] = Field(default_factory=list)
    env: dict[Annotated[str, AfterValidator(_check_env_name)], str] = Field(default_factory=dict)
    init_options: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)  # its workspace/configuration
    enabled: Annotated[bool, Field(strict=True)] = True


class LspConfig(_Section):
    """`[lsp]`: language servers for diagnostics after edits and the lsp tool."""

    enabled: Annotated[bool, Field(strict=True)] = True
    wait: Annotated[float, Field(ge=0, le=30, strict=True, allow_inf_nan=False)] = 2.0
    start_timeout: Seconds = 60.0
    request_timeout: Seconds = 30.0
    idle_timeout: Seconds = 600.0
    max_open_documents: PositiveInt = 64
    servers: dict[Name, LspServerConfig] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _server_tables(cls, data: Any) -> Any:
        """`[lsp.NAME]` tables sit beside the scalar keys: gather them under servers."""
        if not isinstance(data, Mapping):
            return data
        plain = {k: v for k, v in data.items() if not isinstance(v, Mapping) or k == "servers"}
        tables = {k: v for k, v in data.items() if isinstance(v, Mapping) and k != "servers"}
        if tables:
            plain["servers"] = {**dict(plain.get("servers") or {}), **tables}
        return plain


class CheckpointsConfig(_Section):
    """`[checkpoints]`: what each call changed, kept so it can be undone."""

    enabled: Annotated[bool, Field(strict=True)] = True
    # Files over this are left out of snapshots (and named in the checkpoint).
    max_file_mb: Annotated[float, Field(gt=0, le=4096, strict=True, allow_inf_nan=False)] = 10.0
    keep_days: Annotated[float, Field(gt=0, le=3650, strict=True, allow_inf_nan=False)] = 14.0
    # The shadow repository's size past which the oldest checkpoints are dropped.
    max_size_mb: Annotated[float, Field(gt=0, strict=True, allow_inf_nan=False)] = 2048.0
    # Linux: watch the roots with inotify so a command's snapshot only looks at what changed.
    watch: Annotated[bool, Field(strict=True)] = True
