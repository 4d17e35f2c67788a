"""The one network client every tool that goes online uses: an SSRF guard on httpx.

Where the check happens: in the connection itself. ``GuardedBackend`` is an httpcore
network backend that resolves the host, refuses the connection unless every address
is public (or named by ``[network] allow_private``), and connects to the address it
checked — never to a name resolved again later. So every redirect hop, every pooled
connection and DNS rebinding go through the same check; TLS still verifies the host
name (httpcore passes the URL's host as ``server_hostname``).

Around it, ``request``: http and https only, no proxy from the environment (one from
config if set), at most ``MAX_REDIRECTS`` redirects followed by hand (so each new host
is authorized before it is contacted, and credentials are dropped when the origin
changes), the body read up to a byte cap (what is past it is left out and flagged),
and one deadline for the whole exchange. httpx's errors become the project's here and
nowhere else: ``NetworkError`` naming the cause (DNS, TLS, connect, read),
``ToolTimeout``, ``PermissionDenied`` for a refused address, ``InvalidInput`` for a
URL that is not http(s).

Never, whatever ``allow_private`` says: a port on this machine where one of
local-tools' own servers listens (``local_servers``, read from the state dir's records
at each connection, see ``core/servers.py``). The model's tools must not reach the
console that answers its approvals, nor the API its token opens.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from local_tools.core.errors import (
    NetworkError,
    PermissionDenied,
    ToolError,
    ToolTimeout,
)
from local_tools.security.bounded_decode import decoder
from local_tools.security.ip_ranges import IPAddress, blocked_reason, this_machine
from local_tools.security.net_transport import GuardedBackend, _GuardedTransport
from local_tools.security.redirects import (
    REDIRECT_STATUSES,
    headers_for_another_site,
    origin,
    redirect_target,
)
from local_tools.security.urls import host_key, parse_url, rule_host, url_host

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_REDIRECTS",
    "Guard",
    "GuardedBackend",
    "Resolver",
    "WebResponse",
    "default_user_agent",
    "parse_url",
    "request",
    "url_host",
]

MAX_REDIRECTS = 5
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
_BLOCKED_NAMES = ("localhost", "localhost.", "localhost.localdomain")

# (host, port) -> addresses, in the order to try them.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
# Called with a host before the first connection to it (the permission check).
HostCheck = Callable[[str], Awaitable[None]]
# The ports local-tools' own servers listen on now (read at each connection).
ServerPorts = Callable[[], Collection[int]]


def default_user_agent() -> str:
    from local_tools import __version__

    return f"local-tools/{__version__} (an LLM agent's web tool; +https://pypi.org/project/local-tools/)"


async def _system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    seen: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in seen:
            seen.append(address)
    return seen


@dataclass(frozen=True)
class Guard:
    """What may be reached: public addresses, plus the hosts and networks in
    ``allow_private`` (names compared case-insensitively, addresses by CIDR); never a
    port of `local_servers` on this machine."""

    allow_private: Sequence[str] = ()
    resolver: Resolver | None = None
    local_servers: ServerPorts | None = None
    _names: frozenset[str] = field(init=False, repr=False)
    _networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, repr=False
    )

    def __post_init__(self) -> None:
        names: set[str] = set()
        networks = []
        for entry in self.allow_private:
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry.strip().lower().rstrip("."))
        object.__setattr__(self, "_names", frozenset(names))
        object.__setattr__(self, "_networks", tuple(networks))

    def with_allowed(self, *entries: str) -> Guard:
        return Guard((*self.allow_private, *entries), self.resolver, self.local_servers)

    def host_allowed(self, host: str) -> bool:
        return host.lower().rstrip(".") in self._names

    def refusal(self, host: str, address: IPAddress) -> str | None:
        """Why `address` (of `host`) may not be contacted, or None."""
        if self.host_allowed(host) or any(
            address.version == net.version and address in net for net in self._networks
        ):
            return None
        return blocked_reason(address)

    async def addresses(self, host: str, port: int, timeout: float | None = None) -> list[str]:
        """The checked addresses of `host`; PermissionDenied when any of them is refused
        (a name that answers with a public and a private address is a rebinding trick),
        NetworkError when the name does not resolve."""
        bare = host.strip("[]")
        literal = _ip(bare)
        servers = self.local_servers() if self.local_servers is not None else ()
        if literal is not None:
            found = [bare]
        else:
            if bare.lower() in _BLOCKED_NAMES and port in servers:
                raise _own_server(host, "127.0.0.1", port)
            if bare.lower() in _BLOCKED_NAMES and not self.host_allowed(bare):
                raise _refused(host, "127.0.0.1", "loopback (this machine)")
            resolve = self.resolver or _system_resolver
            try:
                found = list(await asyncio.wait_for(resolve(bare, port), timeout))
            except (asyncio.TimeoutError, TimeoutError):
                raise ToolTimeout(
                    f"DNS lookup of {host} did not answer within {timeout:g} s."
                ) from None
            except (socket.gaierror, UnicodeError) as exc:
                raise NetworkError(
                    f"DNS lookup failed for {host}: {_strerror(exc)}. Check the host name.",
                    details={"cause": "dns", "host": host},
                ) from None
            if not found:
                raise NetworkError(
                    f"DNS lookup of {host} returned no address.",
                    details={"cause": "dns", "host": host},
                )
        for text in found:
            address = _ip(text)
            if address is None:
                raise NetworkError(f"DNS lookup of {host} returned {text!r}, not an address.")
            if port in servers and this_machine(address):
                raise _own_server(host, text, port)
            why = self.refusal(bare, address)
            if why is not None:
                raise _refused(host, text, why)
        return found


def _ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _refused(host: str, address: str, why: str) -> PermissionDenied:
    shown = host if host == address else f"{host} ({address})"
    return PermissionDenied(
        f"Refused to connect to {shown}: {why}. Web tools reach public addresses only. "
        "If the user wants this host reachable, they add it to [network] "
        f'allow_private = ["{host}"] in local-tools.toml.',
        details={"host": host, "address": address, "reason": why, "cause": "private_address"},
    )


def _own_server(host: str, address: str, port: int) -> PermissionDenied:
    shown = host if host == address else f"{host} ({address})"
    return PermissionDenied(
        f"Refused to connect to {shown} port {port}: local-tools' own server listens there "
        "(its web console answers approvals, its API runs tools). The model's tools never "
        "reach local-tools itself, whatever [network] allow_private says; a person uses "
        "the console in their own browser.",
        details={"host": host, "address": address, "port": port, "cause": "local_tools_server"},
    )


def _strerror(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).rstrip(".")


# --------------------------------------------------------------------------- requests
# (URLs and hosts: urls.py; bounded content decoding: bounded_decode.py)


@dataclass
class WebResponse:
    url: str  # the final URL, after redirects
    status_code: int
    reason: str
    headers: httpx.Headers
    content: bytes
    truncated: bool  # the body went past max_bytes and was cut there
    redirects: list[str]
    elapsed_ms: float

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


async def request(
    method: str,
    url: str,
    *,
    guard: Guard,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    timeout: float = 30.0,
    max_bytes: int = DEFAULT_MAX_BYTES,
    user_agent: str | None = None,
    proxy: str | None = None,
    check_host: HostCheck | None = None,
    checked_hosts: Iterable[str] = (),
    max_redirects: int = MAX_REDIRECTS,
) -> WebResponse:
    """One HTTP exchange through the guard, redirects followed, under one deadline.

    ``check_host`` is awaited with each host not in ``checked_hosts`` before it is
    contacted (the caller's permission check for redirect targets).
    """
    target = parse_url(url)
    started = time.perf_counter()
    try:
        return await asyncio.wait_for(
            _exchange(
                method.upper(),
                target,
                guard=guard,
                headers=dict(headers or {}),
                content=content,
                timeout=timeout,
                max_bytes=max_bytes,
                user_agent=user_agent or default_user_agent(),
                proxy=proxy,
                check_host=check_host,
                checked={host_key(h) for h in checked_hosts},
                max_redirects=max_redirects,
                started=started,
            ),
            timeout,
        )
    except (asyncio.TimeoutError, TimeoutError):
        raise _timed_out(target, timeout) from None


def _timed_out(url: httpx.URL, timeout: float) -> ToolTimeout:
    return ToolTimeout(
        f"{url.host} did not answer completely within {timeout:g} s. The server may be "
        "slow or down: retry later, or with a larger timeout.",
        details={"host": url.host, "timeout": timeout},
    )


async def _exchange(
    method: str,
    url: httpx.URL,
    *,
    guard: Guard,
    headers: dict[str, str],
    content: bytes | None,
    timeout: float,
    max_bytes: int,
    user_agent: str,
    proxy: str | None,
    check_host: HostCheck | None,
    checked: set[str],
    max_redirects: int,
    started: float,
) -> WebResponse:
    if not any(k.lower() == "user-agent" for k in headers):
        headers["User-Agent"] = user_agent
    redirects: list[str] = []
    async with httpx.AsyncClient(
        transport=_GuardedTransport(guard, proxy),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
    ) as client:
        while True:
            host = rule_host(url)
            if check_host is not None and host not in checked:
                await check_host(host)
                checked.add(host)
            req = client.build_request(method, url, headers=headers, content=content)
            try:
                response = await client.send(req, stream=True)
            except httpx.HTTPError as exc:
                raise _network_error(exc, url, timeout) from None
            except (httpx.InvalidURL, UnicodeError) as exc:  # httpx parses any Location
                raise NetworkError(
                    f"{url} redirected to an invalid URL ({exc}).", details={"cause": "redirects"}
                ) from None
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    if len(redirects) >= max_redirects:
                        raise NetworkError(
                            f"Too many redirects (more than {max_redirects}), last from "
                            f"{url} to {location}.",
                            details={"cause": "redirects", "redirects": redirects},
                        )
                    next_url = redirect_target(url, location)
                    # Read the (small) redirect body, so the connection can be reused.
                    await _read_capped(response, 64 * 1024, url, timeout)
                    redirects.append(str(next_url))
                    if response.status_code == 303 or (
                        response.status_code in (301, 302) and method == "POST"
                    ):
                        method, content = ("HEAD" if method == "HEAD" else "GET"), None
                        headers = {
                            k: v
                            for k, v in headers.items()
                            if k.lower() not in ("content-type", "content-length")
                        }
                    if origin(next_url) != origin(url):
                        headers = headers_for_another_site(headers)
                    url = next_url
                    continue
                body, truncated = await _read_capped(response, max_bytes, url, timeout)
                return WebResponse(
                    url=str(url),
                    status_code=response.status_code,
                    reason=response.reason_phrase,
                    headers=response.headers,
                    content=body,
                    truncated=truncated,
                    redirects=redirects,
                    elapsed_ms=(time.perf_counter() - started) * 1000,
                )
            finally:
                await response.aclose()


async def _read_capped(
    response: httpx.Response, max_bytes: int, url: httpx.URL, timeout: float
) -> tuple[bytes, bool]:
    """The body up to `max_bytes` (decoded), and whether anything was left out.

    The content coding is decoded here, never more than the cap at a time: httpx
    decodes each network read whole, so a few KB of brotli or gzip-of-gzip would be
    gigabytes in memory before any cap could apply."""
    decode = decoder(response, url)
    chunks: list[bytes] = []
    size = 0
    stream = response.aiter_raw()
    try:
        async for raw in stream:
            chunk = decode(raw, max_bytes - size + 1)
            if size + len(chunk) > max_bytes:
                chunks.append(chunk[: max_bytes - size])
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
    except httpx.HTTPError as exc:
        raise _network_error(exc, url, timeout) from None
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return b"".join(chunks), False


def _network_error(exc: httpx.HTTPError, url: httpx.URL, timeout: float) -> ToolError:
    host = url.host
    if isinstance(exc, httpx.TimeoutException):
        return _timed_out(url, timeout)
    cause = exc.__cause__ or exc.__context__
    while cause is not None and not isinstance(cause, (ssl.SSLError, OSError)):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, ssl.SSLError) or "CERTIFICATE" in str(exc) or "SSL" in str(exc):
        return NetworkError(
            f"TLS handshake with {host} failed: {exc}. The site's certificate is not valid "
            "for this name or not trusted; do not retry with another scheme unless the user "
            "says so.",
            details={"cause": "tls", "host": host},
        )
    if isinstance(exc, httpx.ConnectError):
        return NetworkError(
            f"Could not connect to {host}:{url.port or (443 if url.scheme == 'https' else 80)}"
            f" ({_strerror(cause or exc)}). The server may be down or the port wrong.",
            details={"cause": "connect", "host": host},
        )
    what = "The connection broke" if isinstance(exc, httpx.ReadError) else "The exchange failed"
    return NetworkError(
        f"{what} while talking to {host}: {type(exc).__name__}: {exc or 'no detail'}. "
        "Retry; if it persists the server is misbehaving.",
        details={"cause": "read", "host": host},
    )
