"""What the two API clients share: the guarded HTTP client, the key, error mapping,
token counting, closing; and reading a tool call's arguments without ever raising."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from local_tools.core.errors import (
    ExecutionError,
    NetworkError,
    PermissionDenied,
    ToolError,
    ToolTimeout,
)
from local_tools.models import settings, tokens
from local_tools.models.errors import model_error
from local_tools.models.http import guarded_client, reply_cap
from local_tools.models.settings import Resolved
from local_tools.models.types import Message, Reply, ToolCall, ToolSpec
from local_tools.security.net import Guard

__all__ = ["BaseClient", "max_chars", "parse_arguments", "reply_too_long", "tool_call"]

_RAW_SHOWN = 200


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_arguments(raw: object) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None), or (None, why) when `raw` is not a JSON object. An empty
    string is {} (models send it for a tool without parameters)."""
    if isinstance(raw, dict):
        try:  # what an SDK parsed may hold inf/NaN or nest past what can be sent back
            json.dumps(raw, allow_nan=False)
        except (ValueError, TypeError, RecursionError) as exc:
            return None, f"the arguments were malformed ({_why(exc)}). Send a plain JSON object."
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return None, f"the arguments were {type(raw).__name__}, not a JSON object"
    try:
        value = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        return None, (
            f"the arguments were not valid JSON ({exc.msg} at character {exc.pos}): "
            f"{raw[:_RAW_SHOWN]!r}. Send the call again with a JSON object."
        )
    except (ValueError, RecursionError) as exc:  # deep nesting, huge integers, 1e999
        return None, (
            f"the arguments were malformed JSON ({_why(exc)}): {raw[:_RAW_SHOWN]!r}. "
            "Send the call again with a plain JSON object."
        )
    if not isinstance(value, dict):
        return None, f"the arguments were a JSON {type(value).__name__}, not an object"
    return value, None


def max_chars(max_tokens: int) -> int:
    """Characters a streamed reply may put together: a token is rarely over 16."""
    return 1024 * 1024 + max_tokens * 16


def reply_too_long(limit: int) -> ExecutionError:
    return ExecutionError(
        f"The model server's streamed reply passed {limit:,} characters, far more than "
        "max_tokens allows: reading stopped there. The server may be misbehaving; retry.",
        details={"cause": "reply_too_large", "max_chars": limit},
    )


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0][:120] or type(exc).__name__


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
        self._http, self._transport = guarded_client(
            guard,
            timeout=self.config.timeout,
            auth=self._auth_headers(self._key),
            base=_host_port(url),
            proxy=proxy,
        )
        self._sdk: Any = self._make_sdk(self._key, url, self._http)

    def _auth_headers(self, key: str) -> dict[str, str]:
        """The key header every request carries (the transport sets it, whatever the SDK
        took from the environment)."""
        raise NotImplementedError

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
        limit = max_tokens or self.config.max_tokens
        self._transport.failure = None
        self._transport.max_bytes = reply_cap(limit)
        try:
            return await self._complete(system, messages, tools, limit)
        except (ToolError, asyncio.CancelledError):
            raise
        except Exception as exc:
            failure = self._transport.failure
            if failure is not None:  # ours (guard, limits), not the SDK's 403
                raise self._failed(failure) from None
            raise model_error(exc, self._sdk_module(), self.name, self.config, self._key) from None

    def _failed(self, failure: ToolError) -> ToolError:
        details = {"model": self.name, **failure.details}
        if isinstance(failure, PermissionDenied):
            return PermissionDenied(
                f"A request of [models.{self.name}] was stopped by the address guard (its "
                "base_url's own address and port are allowed when named as an address or "
                "localhost; a host name reaching a private address must be listed in "
                f"[network] allow_private): {failure.message}",
                details=details,
            )
        if failure.details.get("cause") == "dns" or isinstance(failure, ToolTimeout):
            return NetworkError(
                f"The host of [models.{self.name}] base_url ({settings.shown_url(self.config)}) "
                f"could not be resolved: {failure.message}",
                details={**details, "cause": "dns"},
            )
        return type(failure)(failure.message, code=failure.code, details=details)

    def malformed(self, what: str) -> ExecutionError:
        """A reply without the parts its API always has."""
        return ExecutionError(
            f"The model server's reply for [models.{self.name}] ({self.model}) had no {what}: "
            f"it does not speak the {self.api} API as expected. Check [models.{self.name}] "
            "base_url and api.",
            details={"model": self.name, "cause": "malformed_reply"},
        )

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


def _host_port(url: str) -> tuple[str, int] | None:
    import httpx2

    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        return None
    port = parsed.port or {"http": 80, "https": 443}.get(parsed.scheme)
    return (str(parsed.host), port) if parsed.host and port else None
