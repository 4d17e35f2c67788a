"""Which `[models.NAME]` a call uses, where it is reached, and its key.

Keys are read from the environment when a client is opened (one per tool call), never
kept in config, a message, a log line or a repr.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from local_tools.core.config import Config
from local_tools.core.config_models import ModelConfig
from local_tools.core.errors import ExecutionError, NotFound

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_KEY_ENVS",
    "Resolved",
    "api_key",
    "base_url",
    "how_to_configure",
    "resolve_model",
    "shown_url",
]

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# Sent when a local server (base_url set) needs no key: the SDKs insist on one.
PLACEHOLDER_KEY = "unused"


def how_to_configure() -> str:
    """What a user adds to local-tools.toml to give task and compact a model."""
    return (
        "No model is configured. task and compact call a model you name in "
        "local-tools.toml, for example a local Ollama server:\n"
        "  [models.local]\n"
        '  model = "qwen2.5-coder:7b"\n'
        '  base_url = "http://127.0.0.1:11434/v1"\n'
        'Or a provider: api = "anthropic" (or "openai"), model = "...", and its key in '
        "ANTHROPIC_API_KEY / OPENAI_API_KEY (api_key_env names another variable). They also "
        "need the SDKs: pip install 'local-tools[models]'."
    )


@dataclass(frozen=True)
class Resolved:
    name: str  # the [models.NAME] key
    config: ModelConfig


def resolve_model(config: Config, name: str | None = None, *, purpose: str = "task") -> Resolved:
    """`name`, else the purpose's model ([task] model; for "compact" [compact] model, then
    [task] model), else the first [models] table."""
    models = config.models
    if not models:
        raise ExecutionError(how_to_configure(), details={"cause": "no_model"})
    chosen = name or ""
    if not chosen and purpose == "compact":
        chosen = config.compact.model
    if not chosen and purpose in ("task", "compact"):
        chosen = config.task.model
    chosen = chosen or next(iter(models))
    if chosen not in models:
        known = ", ".join(sorted(models))
        raise NotFound(
            f"No model named {chosen!r} is configured ([models.{chosen}]). Configured: {known}.",
            details={"model": chosen, "configured": sorted(models)},
        )
    return Resolved(chosen, models[chosen])


def base_url(model: ModelConfig) -> str:
    return model.base_url or DEFAULT_BASE_URLS[model.api]


def shown_url(model: ModelConfig) -> str:
    """The base_url as messages show it: scheme://host:port/path (no credentials, no
    query: a key may hide in either)."""
    return safe_url(base_url(model))


def safe_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def key_env(model: ModelConfig) -> str:
    return model.api_key_env or DEFAULT_KEY_ENVS[model.api]


def api_key(resolved: Resolved) -> str:
    """The key from the environment now; a placeholder for a named server that needs
    none; ExecutionError naming the variable (never a value) for the provider's own.

    OPENAI_API_KEY / ANTHROPIC_API_KEY go to the provider's own endpoint only: a server
    named by base_url gets a key only from a variable api_key_env names, so a provider's
    key never leaks to another host."""
    variable = key_env(resolved.config)
    if resolved.config.base_url and not resolved.config.api_key_env:
        return PLACEHOLDER_KEY
    value = os.environ.get(variable, "").strip()
    if value:
        if not all("!" <= c <= "~" for c in value):
            # Never the value: an HTTP library would echo it in its own error.
            raise ExecutionError(
                f"The key in the environment variable {variable} ([models.{resolved.name}] "
                "api_key_env) holds spaces, line breaks or other characters a key never "
                "has: set it to the key alone.",
                details={"model": resolved.name, "api_key_env": variable},
            )
        return value
    if resolved.config.base_url:
        return PLACEHOLDER_KEY
    raise ExecutionError(
        f"[models.{resolved.name}] calls the {resolved.config.api} API, which needs a key: "
        f"set the environment variable {variable} (api_key_env names another variable) "
        "where local-tools runs.",
        details={"model": resolved.name, "api_key_env": variable},
    )
