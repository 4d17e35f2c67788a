"""The HTTP client the model SDKs are handed: every connection through the SSRF guard.

The SDKs speak `httpx2` (not the `httpx` the web tools use), so this is the httpcore2
twin of `security/net.py`'s `GuardedBackend`: the pool's network backend resolves the
host, checks every address with the same `Guard`, and connects to the address it
checked (no DNS-rebinding gap; each redirect hop and pooled connection goes through
it). With `[network] proxy` the proxy makes the connection, so the target is checked
before each request instead. Environment proxies are never used (trust_env=False).

A refusal is handed back to the SDK as a synthetic 403 marked `x-should-retry: false`
(an exception would be retried by the Anthropic SDK as a connection error) and kept on
the transport, so the client raises the guard's own error, not the SDK's.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import httpcore2
import httpx2

from local_tools.core.errors import PermissionDenied, ToolError
from local_tools.security.net import Guard

__all__ = ["GuardedTransport", "guarded_client"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # Built once: loading the CA bundle costs more than a loopback request.
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Resolve, check, then connect to the checked address (TLS still verifies the
    name: httpcore2 passes the URL's host on as server_hostname)."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self._guard.addresses(host, port, timeout)
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


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport on a pool whose connections all pass the guard. `refusal` holds
    the guard's last error (the client raises it instead of the SDK's 403)."""

    def __init__(self, guard: Guard, proxy: str | None = None) -> None:
        super().__init__(verify=_ssl_context(), trust_env=False, proxy=proxy or None)
        self._guard = guard
        self._proxied = bool(proxy)
        self.refusal: ToolError | None = None
        if not proxy:
            self._pool = httpcore2.AsyncConnectionPool(
                ssl_context=_ssl_context(),
                max_connections=10,
                max_keepalive_connections=5,
                network_backend=_GuardedBackend(guard),
            )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            if self._proxied:
                url = request.url
                await self._guard.addresses(url.host, url.port or _DEFAULT_PORTS[url.scheme])
            return await super().handle_async_request(request)
        except ToolError as exc:  # the guard's (refused address, DNS failure)
            self.refusal = exc
            return httpx2.Response(
                403,
                headers={"x-should-retry": "false"},
                json={"error": {"type": "permission_error", "message": exc.message}},
                request=request,
            )


def guarded_client(
    guard: Guard, *, timeout: float, proxy: str | None = None
) -> tuple[httpx2.AsyncClient, GuardedTransport]:
    """An `httpx2.AsyncClient` for an SDK (`http_client=`), and its transport."""
    transport = GuardedTransport(guard, proxy)
    client = httpx2.AsyncClient(
        transport=transport,
        timeout=httpx2.Timeout(timeout),
        # As the SDKs' own default client: a redirect is followed, each hop guarded, and
        # the key (Authorization) dropped when the origin changes.
        follow_redirects=True,
        trust_env=False,
    )
    return client, transport
