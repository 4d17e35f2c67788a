"""The guarded connection under every web tool's request (see security/net.py).

``GuardedBackend`` resolves the host, has the ``Guard`` check every address, and
connects to a checked address (httpcore passes the URL's host on for TLS, so
certificates are still verified against the name). ``_GuardedTransport`` is httpx's
transport on a pool of such connections, or, with a proxy, checks the target before
each request. The TLS context is built with the first https connection only.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import httpcore
import httpx

from local_tools.core.errors import PermissionDenied

if TYPE_CHECKING:
    from local_tools.security.net import Guard

__all__ = ["GuardedBackend"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check, then connect to the checked address (httpcore passes the URL's
    host on for TLS, so certificates are still verified against the name)."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
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
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise PermissionDenied("Web tools do not connect to Unix sockets.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport on a pool whose connections all go through the guard. With a
    configured proxy the proxy makes the connection, so the target is checked here,
    before each request, instead."""

    def __init__(self, guard: Guard, proxy: str | None) -> None:
        self._guard = guard
        self._proxied = bool(proxy)
        if proxy:
            super().__init__(verify=_ssl_context(), trust_env=False, proxy=proxy)
        else:
            # Not super().__init__: it would build a pool of its own and, with it, the
            # TLS context that a plain-http fetch never uses.
            self._pool = _LazyTLSPool(
                max_connections=10,
                max_keepalive_connections=5,
                network_backend=GuardedBackend(guard),
            )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._proxied:
            url = request.url
            await self._guard.addresses(url.host, url.port or _DEFAULT_PORTS[url.scheme])
        return await super().handle_async_request(request)


class _LazyTLSPool(httpcore.AsyncConnectionPool):
    """A pool whose TLS context (the CA bundle, ~50 ms to load) is built with its first
    https connection: an http:// fetch never pays for it. Every TLS connection still
    gets the verifying context: httpcore hands a connection the pool's `_ssl_context`
    when it creates it, and it is set just before."""

    def create_connection(self, origin: httpcore.Origin) -> httpcore.AsyncConnectionInterface:
        if origin.scheme != b"http" and self._ssl_context is None:
            self._ssl_context = _ssl_context()
        return super().create_connection(origin)


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # Built once: loading the CA bundle costs ~10 ms, more than a loopback request.
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
