"""An SDK's failure, after its own retries, as the project's error for a model to read.

Both SDKs share the shape (`APIStatusError` with status and body, `APIConnectionError`,
`APITimeoutError`), so one mapping serves both, given the SDK module. A stream that breaks
mid-way raises httpx2's own errors (the SDKs do not wrap those): mapped here too. The
key's value never appears: a server's 401/403 text is left out (OpenAI's echoes part of
the key) and any other text has the key scrubbed.
"""

from __future__ import annotations

import email.utils
import time
from types import ModuleType
from typing import Any

import httpx2

from local_tools.core.config_models import ModelConfig
from local_tools.core.errors import (
    ExecutionError,
    InvalidInput,
    NetworkError,
    PermissionDenied,
    ToolError,
    ToolTimeout,
)
from local_tools.models import settings

__all__ = ["model_error", "retry_after"]

_MAX_TEXT = 500


def model_error(
    exc: BaseException, sdk: ModuleType, name: str, model: ModelConfig, key: str
) -> ToolError:
    where = f"[models.{name}] ({model.model} at {settings.shown_url(model)})"
    if isinstance(exc, (sdk.APITimeoutError, httpx2.TimeoutException)):
        return ToolTimeout(
            f"Model {where} did not answer within {model.timeout:g} s ([models.{name}] timeout). "
            "Retry, give it less to do, or raise that timeout.",
            details={"model": name, "timeout": model.timeout},
        )
    if isinstance(exc, sdk.APIStatusError):
        return _status_error(exc, name, model, where, key)
    if isinstance(exc, (sdk.APIConnectionError, httpx2.HTTPError)):
        cause = _root(exc)
        return NetworkError(
            f"Could not reach model {where}: {_scrub(str(cause) or type(cause).__name__, key)}. "
            f"Is the server running? Check [models.{name}] base_url.",
            details={"model": name, "cause": "connect", "base_url": settings.shown_url(model)},
        )
    # What is left: a reply our reading of it did not expect (the SDK parsed it loosely).
    return ExecutionError(
        f"The model server's reply for {where} was not in the {model.api} API's shape "
        f"({type(exc).__name__}: {_scrub(str(exc), key)[:_MAX_TEXT]}). Check [models.{name}] "
        "base_url and api.",
        details={"model": name, "cause": "malformed_reply"},
    )


def _status_error(exc: Any, name: str, model: ModelConfig, where: str, key: str) -> ToolError:
    code: int = exc.status_code
    said = _scrub(_server_message(exc.body) or str(exc.message), key)
    details: dict[str, Any] = {"model": name, "status": code}
    if code < 300:  # an error event inside a 200 stream (Anthropic's `event: error`)
        kind = _server_type(exc.body)
        return NetworkError(
            f"Model {where} reported an error mid-reply"
            f"{f' ({kind})' if kind else ''}: {said}. Retry later.",
            details={**details, "type": kind},
        )
    if 300 <= code < 400:
        location = exc.response.headers.get("location", "")
        to = f" to {_scrub(settings.safe_url(location), key)}" if location else ""
        return NetworkError(
            f"Model {where} answered with a redirect ({code}{to}). Model requests do not "
            f"follow redirects: set [models.{name}] base_url to the address the API is "
            "served at.",
            details={**details, "cause": "redirect"},
        )
    if code == 429:
        wait = retry_after(exc.response.headers)
        details["retry_after"] = wait
        when = f"retry after {wait:g} s" if wait is not None else "retry in a while"
        return NetworkError(
            f"Model {where} rate limited the request (429, after {model.max_retries} retries); "
            f"{when}. The server said: {said}",
            details=details,
        )
    if code in (401, 403):
        variable = settings.key_env(model)
        return PermissionDenied(
            f"Model {where} refused the key ({code}). The key comes from the environment "
            f"variable {variable} ([models.{name}] api_key_env): check it is set to a valid "
            "key for this server.",
            details={**details, "api_key_env": variable},
        )
    if 400 <= code < 500:
        return InvalidInput(
            f"Model {where} rejected the request ({code}): {said}. Check [models.{name}] "
            "(model name, base_url) or what was sent.",
            details=details,
        )
    return NetworkError(
        f"Model {where} failed with {code} (after {model.max_retries} retries): {said}. "
        "The server may be overloaded: retry later.",
        details=details,
    )


def _server_message(body: object) -> str:
    """The `message` of an error body: {"message"}, {"error": {"message"}}, or the text."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])[:_MAX_TEXT]
        if isinstance(body.get("message"), str):
            return str(body["message"])[:_MAX_TEXT]
    return "" if body is None else str(body)[:_MAX_TEXT]


def _server_type(body: object) -> str:
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("type"), str):
            return str(inner["type"])[:80]
    return ""


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait (retry-after-ms, retry-after: seconds or a date)."""
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value:
            try:
                return max(0.0, float(value) / divisor)
            except ValueError:
                pass
    value = headers.get("retry-after")
    if value:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
    return None


def _root(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


_SHOWN = "[key]"
_PIECE = 8  # a server echoing this much of either end of the key has shown too much


def _scrub(text: str, key: str) -> str:
    """`text` without the key, its repr, or any 8+ character start or end of it."""
    if not key or len(key) < 4 or key == settings.PLACEHOLDER_KEY:
        return text
    text = text.replace(repr(key), _SHOWN).replace(key, _SHOWN)
    if len(key) <= _PIECE:
        return text
    head, tail = key[:_PIECE], key[-_PIECE:]
    at = text.find(head)
    while at >= 0:
        end = at + _PIECE
        while end < len(text) and end - at < len(key) and text[end] == key[end - at]:
            end += 1
        text = text[:at] + _SHOWN + text[end:]
        at = text.find(head, at + len(_SHOWN))
    at = text.find(tail)
    while at >= 0:
        start, n = at, _PIECE
        while start > 0 and n < len(key) and text[start - 1] == key[-n - 1]:
            start, n = start - 1, n + 1
        text = text[:start] + _SHOWN + text[at + _PIECE :]
        at = text.find(tail, start + len(_SHOWN))
    return text
