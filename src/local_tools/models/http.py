"""The HTTP client the model SDKs are handed: every connection through the SSRF guard,
only the headers we choose, and every reply bounded in bytes and time.

The SDKs speak `httpx2` (not the `httpx` the web tools use), so this is the httpcore2
twin of `security/net.py`'s `GuardedBackend`: the pool's network backend resolves the
host, checks every address with the same `Guard`, and connects to the address it
checked (no DNS-rebinding gap; each pooled connection goes through it). With `[network]
proxy` the proxy makes the connection, so the target is checked before each request
instead. Environment proxies are never used (trust_env=False); redirects are never
followed (the model APIs do not redirect: a 3xx is an error naming it).

The base_url's own (host, port) may be private when it is an address or `localhost`
(naming it in [models.X] is naming it); a DNS name reaches private addresses only when
`[network] allow_private` lists it (a public-looking name must not lead inward).

What the transport enforces on each request and reply (the SDKs read the environment:
ANTHROPIC_CUSTOM_HEADERS, OPENAI_ORG_ID, ... would go to any base_url server):
- headers: only the SDK's protocol headers pass, and the key header is ours;
- bytes: a reply longer than `max_bytes` stops with an error saying so; replies are
  asked for uncompressed and a compressed one is refused (no decompression bomb);
- time: each attempt (connect, headers, the whole body) ends within `timeout` s;
- Retry-After: above `MAX_RETRY_AFTER` s the reply is marked not to be retried (the
  caller reports the wait) instead of the SDK sleeping an hour.

A refusal or a tripped limit is handed back to the SDK as a synthetic 403 marked
`x-should-retry: false` (an exception would be retried as a connection error) and kept on
the transport (`failure`), so the client raises our own error, not the SDK's.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from functools import lru_cache
from typing import Any

import httpcore2
import httpx2

from local_tools.core.errors import ExecutionError, PermissionDenied, ToolError
from local_tools.models.errors import retry_after
from local_tools.security.net import Guard

__all__ = ["MAX_RETRY_AFTER", "GuardedTransport", "guarded_client", "reply_cap"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOCAL_NAMES = ("localhost", "localhost.", "localhost.localdomain")
MAX_RETRY_AFTER = 60.0
# The SDKs' protocol headers; anything else they add (from the environment: custom
# headers, organization, project, tokens) is dropped.
_KEPT = frozenset(
    {
        "host",
        "accept",
        "connection",
        "content-type",
        "content-length",
        "transfer-encoding",
        "user-agent",
        "anthropic-version",
        "idempotency-key",
    }
)
_KEPT_PREFIX = "x-stainless-"


def reply_cap(max_tokens: int) -> int:
    """Bytes one reply may take: a stream spends ~100-300 bytes of JSON per token."""
    return 1024 * 1024 + max_tokens * 512


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # Built once: loading the CA bundle costs more than a loopback request.
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _is_named_local(host: str) -> bool:
    """An address literal or localhost: naming it in base_url names the machine itself."""
    import ipaddress

    bare = host.strip("[]").lower()
    if bare in _LOCAL_NAMES:
        return True
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        return False
    return True


class _Target:
    """The guard for each (host, port): the base_url's own may be private (see above)."""

    def __init__(self, guard: Guard, base: tuple[str, int] | None) -> None:
        self._guard = guard
        self._base = (base[0].lower(), base[1]) if base else None
        named = base is not None and _is_named_local(base[0])
        self._base_guard = guard.with_allowed(base[0]) if base and named else guard

    def guard(self, host: str, port: int) -> Guard:
        return self._base_guard if (host.lower(), port) == self._base else self._guard


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Resolve, check, then connect to the checked address (TLS still verifies the
    name: httpcore2 passes the URL's host on as server_hostname)."""

    def __init__(self, target: _Target) -> None:
        self._target = target
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self._target.guard(host, port).addresses(host, port, timeout)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        raise PermissionDenied("Model requests do not go to Unix sockets.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _TooLong(Exception):
    """The reply passed its byte cap (the transport holds the ToolError)."""


class _BoundedStream(httpx2.AsyncByteStream):
    """A reply body read within a byte cap and a deadline (monotonic)."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        request: httpx2.Request,
        transport: GuardedTransport,
        deadline: float,
    ) -> None:
        self._inner = inner
        self._request = request
        self._transport = transport
        self._deadline = deadline

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        parts = self._inner.__aiter__()
        while True:
            try:
                async with asyncio.timeout_at(_loop_deadline(self._deadline)):
                    part = await parts.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise httpx2.ReadTimeout(
                    "the whole reply took longer than the timeout", request=self._request
                ) from None
            seen += len(part)
            if seen > self._transport.max_bytes:
                self._transport.failure = _too_long(self._transport.max_bytes)
                raise _TooLong()
            yield part

    async def aclose(self) -> None:
        await self._inner.aclose()


def _loop_deadline(deadline: float) -> float:
    """`deadline` (time.monotonic) on the event loop's clock."""
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())


def _too_long(cap: int) -> ToolError:
    return ExecutionError(
        f"The model server's reply passed {cap // 1024 // 1024} MB, far more than a reply "
        "of max_tokens tokens takes: reading stopped there. The server is misbehaving "
        "(or is not a model API): retry, or check the model's base_url.",
        details={"cause": "reply_too_large", "max_bytes": cap},
    )


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport on a pool whose connections all pass the guard. `failure` holds
    the last refusal or tripped limit (the client raises it instead of the SDK's error);
    `max_bytes` is set per request by the client."""

    def __init__(
        self,
        guard: Guard,
        *,
        timeout: float,
        auth: Mapping[str, str],
        base: tuple[str, int] | None = None,
        proxy: str | None = None,
    ) -> None:
        super().__init__(verify=_ssl_context(), trust_env=False, proxy=proxy or None)
        self._target = _Target(guard, base)
        self._proxied = bool(proxy)
        self._timeout = timeout
        self._auth = dict(auth)
        self.max_bytes = reply_cap(4096)
        self.failure: ToolError | None = None
        if not proxy:
            self._pool = httpcore2.AsyncConnectionPool(
                ssl_context=_ssl_context(),
                max_connections=10,
                max_keepalive_connections=5,
                network_backend=_GuardedBackend(self._target),
            )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.failure is not None:  # a retry after a tripped limit: stop there
            return _stopped(request, self.failure)
        _our_headers(request, self._auth)
        deadline = time.monotonic() + self._timeout
        try:
            try:
                async with asyncio.timeout_at(_loop_deadline(deadline)):
                    if self._proxied:
                        url = request.url
                        port = url.port or _DEFAULT_PORTS[url.scheme]
                        await self._target.guard(url.host, port).addresses(url.host, port)
                    response = await super().handle_async_request(request)
            except TimeoutError:
                raise httpx2.ReadTimeout("no reply within the timeout", request=request) from None
        except ToolError as exc:  # the guard's (refused address, DNS failure)
            self.failure = exc
            return _stopped(request, exc)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            self.failure = ExecutionError(
                f"The model server sent a {encoding}-compressed reply though asked for "
                "an uncompressed one: refused (its size could not be bounded).",
                details={"cause": "compressed_reply"},
            )
            return _stopped(request, self.failure)
        headers = response.headers.copy()
        wait = retry_after(headers)
        if wait is not None and wait > MAX_RETRY_AFTER:
            # Not slept: the caller is told how long the server asked to wait.
            headers["x-should-retry"] = "false"
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=headers,
            stream=_BoundedStream(response.stream, request, self, deadline),
            extensions=response.extensions,
            request=request,
        )


def _our_headers(request: httpx2.Request, auth: Mapping[str, str]) -> None:
    for name in list(request.headers.keys()):
        low = name.lower()
        if low not in _KEPT and not low.startswith(_KEPT_PREFIX):
            del request.headers[name]
    request.headers["accept-encoding"] = "identity"
    request.headers.update(auth)


def _stopped(request: httpx2.Request, error: ToolError) -> httpx2.Response:
    return httpx2.Response(
        403,
        headers={"x-should-retry": "false"},
        json={"error": {"type": "permission_error", "message": error.message}},
        request=request,
    )


def guarded_client(
    guard: Guard,
    *,
    timeout: float,
    auth: Mapping[str, str],
    base: tuple[str, int] | None = None,
    proxy: str | None = None,
) -> tuple[httpx2.AsyncClient, GuardedTransport]:
    """An `httpx2.AsyncClient` for an SDK (`http_client=`), and its transport. `auth`: the
    key header(s) every request carries; `base`: the base_url's (host, port)."""
    transport = GuardedTransport(guard, timeout=timeout, auth=auth, base=base, proxy=proxy)
    client = httpx2.AsyncClient(
        transport=transport,
        timeout=httpx2.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
    )
    return client, transport
