"""What the two API clients share: the guarded HTTP client, the key, error mapping,
token counting, closing; and reading a tool call's arguments without ever raising."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from local_tools.core.errors import NetworkError, ToolError
from local_tools.models import settings, tokens
from local_tools.models.errors import model_error
from local_tools.models.http import guarded_client
from local_tools.models.settings import Resolved
from local_tools.models.types import Message, Reply, ToolCall, ToolSpec
from local_tools.security.net import Guard

__all__ = ["BaseClient", "parse_arguments", "tool_call"]

_RAW_SHOWN = 200


def parse_arguments(raw: object) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None), or (None, why) when `raw` is not a JSON object. An empty
    string is {} (models send it for a tool without parameters)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return None, f"the arguments were {type(raw).__name__}, not a JSON object"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, (
            f"the arguments were not valid JSON ({exc.msg} at character {exc.pos}): "
            f"{raw[:_RAW_SHOWN]!r}. Send the call again with a JSON object."
        )
    if not isinstance(value, dict):
        return None, f"the arguments were a JSON {type(value).__name__}, not an object"
    return value, None


def tool_call(call_id: str, name: str, raw: object) -> ToolCall:
    arguments, error = parse_arguments(raw)
    return ToolCall(id=call_id, name=name, arguments=arguments, error=error)


class BaseClient:
    """One configured model behind its SDK (subclasses: the request and the reply)."""

    api = ""

    def __init__(self, resolved: Resolved, guard: Guard, proxy: str | None = None) -> None:
        self.name = resolved.name
        self.model = resolved.config.model
        self.config = resolved.config
        self._key = settings.api_key(resolved)
        url = settings.base_url(resolved.config)
        # The base_url's own host is allowed: naming it in [models.X] is naming it.
        host = _host(url)
        self._http, self._transport = guarded_client(
            guard.with_allowed(host) if host else guard, timeout=self.config.timeout, proxy=proxy
        )
        self._sdk: Any = self._make_sdk(self._key, url, self._http)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} [models.{self.name}] {self.model}>"

    def _make_sdk(self, key: str, base_url: str, http: Any) -> Any:
        raise NotImplementedError

    def _sdk_module(self) -> ModuleType:
        raise NotImplementedError

    async def _complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> Reply:
        raise NotImplementedError

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        self._transport.refusal = None
        try:
            return await self._complete(
                system, messages, tools, max_tokens or self.config.max_tokens
            )
        except (ToolError, asyncio.CancelledError):
            raise
        except Exception as exc:
            refusal = self._transport.refusal
            if refusal is not None:  # the guard's, not the SDK's 403
                raise ToolError(
                    f"A request of [models.{self.name}] was stopped by the address guard "
                    f"(its base_url's host is allowed, other private hosts are not): "
                    f"{refusal.message}",
                    code=refusal.code,
                    details={"model": self.name, **refusal.details},
                ) from None
            raise model_error(exc, self._sdk_module(), self.name, self.config, self._key) from None

    def cut_short(self) -> NetworkError:
        return NetworkError(
            f"The reply stream of [models.{self.name}] ({self.model}) ended before the reply "
            "was complete (no stop reason). Retry.",
            details={"model": self.name, "cause": "stream_cut"},
        )

    def count_tokens(self, text: str) -> int:
        return tokens.count_tokens(text, self.config.encoding)

    def estimate(self, request: object, output: str) -> tuple[int, int]:
        """Usage by our own count, for a server that reported none."""
        enc = self.config.encoding
        return tokens.count_json_tokens(request, enc), tokens.count_tokens(output, enc)

    async def aclose(self) -> None:
        try:
            await self._sdk.close()
        finally:
            await self._http.aclose()

    async def __aenter__(self) -> BaseClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _host(url: str) -> str:
    import httpx2

    try:
        return str(httpx2.URL(url).host)
    except (httpx2.InvalidURL, TypeError, ValueError):
        return ""
