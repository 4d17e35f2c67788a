"""The loopback proxy Chromium makes every connection through, so it connects only where
the guard checked.

Chromium is launched with ``--proxy-server`` naming this proxy and
``--proxy-bypass-list=<-loopback>`` (loopback too goes through it). Chromium then never
resolves a page's host names itself: for each connection the proxy resolves the host
with ``net.Guard`` (the web tools' check and resolver hook), refuses it unless every
address is allowed, and connects to an address it checked. So DNS rebinding between a
check and the connection, redirect hops (which Playwright's routing does not see),
websockets, workers and preconnects all meet the same guard.

- ``CONNECT host:port`` (https, wss, ws): a byte tunnel once the address is checked;
  TLS is Chromium's own, end to end, so certificates are still checked for the name.
- ``GET http://host/...`` (plain http): the request is sent on in origin form with
  ``Connection: close`` both ways. One request per connection keeps the proxy from
  parsing message framing, and a reused client connection can never carry a request
  for another host to the first host's server.

A connection refused by the guard or that fails (DNS): CONNECT gets 403 (Chromium:
ERR_TUNNEL_CONNECTION_FAILED), plain http a closed connection (ERR_EMPTY_RESPONSE, not a
page that could pass as the site's); ``on_failed(target, method, reason, refused)`` is
told either way. The proxy listens on
127.0.0.1 only and checks exactly as the tools do, so it gives other local programs no
reach they lack.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from urllib.parse import urlsplit

from local_tools.core.errors import PermissionDenied, ToolError
from local_tools.security import net

__all__ = ["GuardProxy"]

_HEAD_LIMIT = 256 * 1024  # request or response head; Chromium's own cap is 256 KB
_CHUNK = 64 * 1024
_HOP_HEADERS = frozenset(
    {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization", b"te"}
)
_CONNECT_TIMEOUT = 15.0
_DNS_TIMEOUT = 10.0

OnFailed = Callable[[str, str, str, bool], None]  # (target, method, reason, refused)


class GuardProxy:
    """An HTTP proxy on 127.0.0.1 whose every upstream connection passes `guard`."""

    def __init__(self, guard: net.Guard, on_failed: OnFailed) -> None:
        self.guard = guard
        self.on_failed = on_failed
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=_HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # Open tunnels (3.11 leaves them open): ended, their sockets closed.
            handlers = list(self._handlers)
            for task in handlers:
                task.cancel()
            if handlers:
                await asyncio.wait(handlers, timeout=5)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None

    # -- one client connection -------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        upstream: list[asyncio.StreamWriter] = []  # what _open connected, to close here
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            line, _, rest = head.partition(b"\r\n")
            parts = line.split(b" ")
            if len(parts) != 3:
                return
            method, target = parts[0].decode("latin-1"), parts[1].decode("latin-1")
            if method == "CONNECT":
                await self._connect_tunnel(target, reader, writer, upstream)
            else:
                await self._forward(method, target, rest, reader, writer, upstream)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass  # either side went away: nothing to report to anyone
        except asyncio.CancelledError:
            pass  # the proxy is stopping: this connection simply ends
        except Exception:  # a malformed request (a port past 65535 ...) ends its connection only
            pass
        finally:
            self._handlers.discard(task)  # type: ignore[arg-type]
            for w in (*upstream, writer):
                w.close()

    async def _open(
        self, host: str, port: int, target: str, method: str, opened: list[asyncio.StreamWriter]
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to a checked address of `host` (its writer added to `opened`),
        or None (refused or unreachable)."""
        try:
            addresses = await self.guard.addresses(host, port, timeout=_DNS_TIMEOUT)
        except ToolError as exc:  # refused, or DNS failed or timed out
            self.on_failed(target, method, exc.message, isinstance(exc, PermissionDenied))
            return None
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                pair = await asyncio.wait_for(
                    asyncio.open_connection(address, port, limit=_HEAD_LIMIT), _CONNECT_TIMEOUT
                )
                opened.append(pair[1])
                return pair
        return None

    async def _connect_tunnel(
        self,
        target: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        opened: list[asyncio.StreamWriter],
    ) -> None:
        host, _, port_text = target.rpartition(":")
        host = host.strip("[]")
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        pair = await self._open(host, int(port_text), target, "CONNECT", opened)
        if pair is None:
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await _pipe_both(reader, writer, *pair)

    async def _forward(
        self,
        method: str,
        target: str,
        rest: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        opened: list[asyncio.StreamWriter],
    ) -> None:
        try:
            url = urlsplit(target)
            port = url.port or 80  # urlsplit refuses ports past 65535
        except ValueError:
            return
        if url.scheme != "http" or not url.hostname:
            return  # origin-form or another scheme: not a proxy request
        pair = await self._open(url.hostname, port, target, method, opened)
        if pair is None:
            return
        up_reader, up_writer = pair
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        up_writer.write(f"{method} {path} HTTP/1.1\r\n".encode("latin-1"))
        up_writer.write(_without_hop_headers(rest) + b"Connection: close\r\n\r\n")
        # The body (if any) flows on while the answer comes back.
        sending = asyncio.ensure_future(_pipe(reader, up_writer))
        try:
            while True:  # 1xx heads first; the final head is rewritten too
                head = await up_reader.readuntil(b"\r\n\r\n")
                status_line, _, fields = head.partition(b"\r\n")
                writer.write(status_line + b"\r\n" + _without_hop_headers(fields))
                writer.write(b"Connection: close\r\n\r\n")
                code = status_line.split(b" ")[1:2]
                if not (code and code[0].startswith(b"1") and code[0] != b"101"):
                    break
            await _pipe(up_reader, writer)
        finally:
            sending.cancel()


def _without_hop_headers(fields: bytes) -> bytes:
    """Header lines (each ending CRLF, the blank line left out) minus hop-by-hop ones."""
    kept = [
        line + b"\r\n"
        for line in fields.split(b"\r\n")
        if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    return b"".join(kept)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        data = await reader.read(_CHUNK)
        if not data:
            if writer.can_write_eof():
                with contextlib.suppress(OSError):
                    writer.write_eof()
            return
        writer.write(data)
        await writer.drain()


async def _pipe_both(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Bytes both ways until both sides have finished (or one breaks)."""
    tasks = [
        asyncio.ensure_future(_pipe(a_reader, b_writer)),
        asyncio.ensure_future(_pipe(b_reader, a_writer)),
    ]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
