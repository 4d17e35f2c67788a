"""Config sections of the model-backed tools: `[models.NAME]`, `[task]`, `[compact]`.

local-tools has no model of its own: `task` and `compact` call one the user configures.
Keys are never stored here, only the name of the environment variable holding one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from local_tools.core.config_checks import _check_env_name, _check_http_url, _check_non_empty

__all__ = ["AgentConfig", "CompactConfig", "ModelConfig", "TaskConfig"]

Name = Annotated[str, AfterValidator(_check_non_empty)]
PositiveInt = Annotated[int, Field(gt=0, strict=True)]
Seconds = Annotated[float, Field(gt=0, le=86400, strict=True, allow_inf_nan=False)]


def _check_base_url(value: str) -> str:
    # Credentials in the URL would be echoed wherever the URL is shown.
    value = _check_http_url(value)
    if "@" in urlsplit(value).netloc:
        raise ValueError(
            "must not hold a user name or password (user:pw@host): put the key in an "
            "environment variable and name it with api_key_env"
        )
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Section):
    """`[models.NAME]`: one model endpoint, reached through the official SDK of its API."""

    api: Literal["openai", "anthropic"] = "openai"
    model: Name
    # "": the provider's own endpoint. OpenAI-compatible servers (Ollama, vLLM, LM Studio,
    # OpenRouter) are named here; a private or loopback address named here is allowed.
    base_url: Annotated[str, AfterValidator(_check_base_url)] = ""
    # The environment variable holding the key, read at call time ("": the SDK's default,
    # OPENAI_API_KEY / ANTHROPIC_API_KEY; a local server needs none).
    api_key_env: Annotated[str, AfterValidator(_check_env_name)] = ""
    max_tokens: PositiveInt = 4096  # per reply
    timeout: Seconds = 120.0  # per request
    max_retries: Annotated[int, Field(ge=0, le=10, strict=True)] = (
        2  # 429/5xx, honouring Retry-After
    )
    stream: Annotated[bool, Field(strict=True)] = True
    context_tokens: PositiveInt = 128_000  # the model's context window
    # How tokens are counted where the provider has no counter of its own.
    encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base"


class AgentConfig(_Section):
    """`[task.agents.NAME]`: a subagent: the tools it may call (profile entries) and its
    instructions."""

    description: str = ""
    tools: list[Name] = Field(default_factory=list)  # profile entries: toolsets, tools, globs
    prompt: str = ""  # added to the system prompt
    model: str = ""  # "": [task] model
    # Refuse every call that would change something, whatever its tools (as explore does).
    read_only: Annotated[bool, Field(strict=True)] = False


class TaskConfig(_Section):
    """`[task]`: subagents."""

    model: str = ""  # "": the first [models] table
    max_steps: PositiveInt = 40  # model turns per task
    max_tokens: PositiveInt = 400_000  # input + output tokens per task
    max_seconds: Seconds = 900.0  # wall time per task
    max_concurrent: PositiveInt = 4  # tasks running at once per toolbox
    # 1: a subagent cannot start subagents of its own (nesting off).
    max_depth: Annotated[int, Field(ge=1, le=5, strict=True)] = 1
    agents: dict[Name, AgentConfig] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _agent_tables(cls, data: Any) -> Any:
        """`[task.agents.NAME]`, or `[task.NAME]` tables beside the scalar keys."""
        if not isinstance(data, Mapping):
            return data
        plain = {k: v for k, v in data.items() if not isinstance(v, Mapping) or k == "agents"}
        tables = {k: v for k, v in data.items() if isinstance(v, Mapping) and k != "agents"}
        if tables:
            plain["agents"] = {**dict(plain.get("agents") or {}), **tables}
        return plain


class CompactConfig(_Section):
    """`[compact]`: shrinking a conversation that outgrew its context."""

    model: str = ""  # "": [task] model, else the first [models] table
    keep_recent_outputs: Annotated[int, Field(ge=0, le=100, strict=True)] = 3
