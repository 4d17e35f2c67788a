"""The models engine: a configured `[models.NAME]` behind its API's official SDK.

    async with open_model(config, purpose="task", local_servers=servers) as model:
        reply = await model.complete(system, messages, tools)

One client per API (`openai_chat.OpenAIChat`: Chat Completions; `anthropic_messages.
AnthropicMessages`: Messages), both speaking the neutral conversation of `types.py`, each
request through the SSRF guard (`http.py`), SDK failures mapped to the project's errors
(`errors.py`), tokens counted by OpenAI's encodings (`tokens.py`).

Importing this package needs neither SDK: they are imported when a model is opened, and
their absence is an ExecutionError naming `pip install 'local-tools[models]'`.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from local_tools.core.config import Config
from local_tools.core.errors import ExecutionError
from local_tools.core.extras import install_command
from local_tools.models.settings import Resolved, how_to_configure, resolve_model
from local_tools.models.tokens import count_json_tokens, count_messages, count_tokens
from local_tools.models.types import Message, ModelClient, Reply, ToolCall, ToolSpec, Usage
from local_tools.security.net import Guard, ServerPorts

if TYPE_CHECKING:
    from local_tools.models.base import BaseClient

__all__ = [
    "Message",
    "ModelClient",
    "Reply",
    "Resolved",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "count_json_tokens",
    "count_messages",
    "count_tokens",
    "how_to_configure",
    "model_configured",
    "open_model",
    "resolve_model",
]

_SDKS = {"openai": "openai", "anthropic": "anthropic"}


def model_configured(config: Config) -> bool:
    """Whether any `[models.NAME]` table exists (task and compact are listed only then)."""
    return bool(config.models)


def open_model(
    config: Config,
    name: str | None = None,
    *,
    purpose: str = "task",
    local_servers: ServerPorts,
) -> BaseClient:
    """A client for `name` (else the purpose's model, see `resolve_model`); use it as an
    async context manager or call `aclose()`. One per tool call: a client is bound to the
    event loop it first runs on.

    Raises ExecutionError (no model configured: says how; SDK missing; no key for a
    provider's endpoint), NotFound (no such model). `local_servers` (required, so no
    caller forgets it): the ports of local-tools' own servers, refused whatever is
    allowed: `lambda: reserved_ports(state_dir)` (`core.servers`).
    """
    resolved = resolve_model(config, name, purpose=purpose)
    api = resolved.config.api
    _require(_SDKS[api])
    guard = Guard(tuple(config.network.allow_private), local_servers=local_servers)
    proxy = config.network.proxy or None
    if api == "anthropic":
        from local_tools.models.anthropic_messages import AnthropicMessages

        return AnthropicMessages(resolved, guard, proxy)
    from local_tools.models.openai_chat import OpenAIChat

    return OpenAIChat(resolved, guard, proxy)


def _require(module: str) -> None:
    # find_spec, not an import: the client imports it (an SDK import costs ~0.5 s).
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ExecutionError(
            f"Calling a model needs the {module} SDK, which is not installed here. "
            f"Install it with: {install_command('models')}",
            details={"extra": "models", "install": install_command("models")},
        )
