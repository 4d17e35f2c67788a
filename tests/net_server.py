"""A real HTTP server on a loopback address for the web tools' tests.

Routes are plain functions of the request returning ``(status, headers, body)``; a
body may be bytes or an iterator of chunks (sent as they come, for slow bodies).
Every server counts the requests it received (the SSRF canary's proof) and stops
cleanly, so no thread or socket outlives a test.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Request", "Server", "serve"]

Body = bytes | Iterable[bytes]
Route = Callable[["Request"], tuple[int, dict[str, str], Body]]


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    host: str
    port: int = 0
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: Any = None
    _thread: Any = None

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def route(self, path: str) -> Callable[[Route], Route]:
        def add(func: Route) -> Route:
            self.routes[path] = func
            return func

        return add

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)


def serve(host: str = "127.0.0.1") -> Server:
    server = Server(host)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            req = Request(self.command, path, query, dict(self.headers.items()), body)
            server.requests.append(req)
            route = server.routes.get(path)
            if route is None:
                status, headers, payload = 404, {"Content-Type": "text/plain"}, b"no such page"
            else:
                status, headers, payload = route(req)
            self.send_response(status)
            chunked = not isinstance(payload, bytes)
            for key, value in headers.items():
                self.send_header(key, value)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command == "HEAD":
                return
            try:
                if not chunked:
                    self.wfile.write(payload)  # type: ignore[arg-type]
                    return
                for chunk in payload:
                    if server.stopping.is_set():
                        return
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (a cap, a timeout): expected

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle

    class Quiet(ThreadingHTTPServer):
        daemon_threads = True
        block_on_close = False

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    if ":" in host:
        import socket

        Quiet.address_family = socket.AF_INET6
    httpd = Quiet((host, 0), Handler)
    server.port = httpd.server_address[1]
    server._httpd = httpd
    server._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    server._thread.start()
    return server


# --------------------------------------------------------------------------- bodies


def html(text: str, charset: str | None = "utf-8", status: int = 200) -> Route:
    ctype = "text/html" + (f"; charset={charset}" if charset else "")
    data = text.encode(charset or "utf-8")
    return lambda req: (status, {"Content-Type": ctype}, data)


def as_json(value: Any, status: int = 200) -> Route:
    data = json.dumps(value).encode()
    return lambda req: (status, {"Content-Type": "application/json"}, data)


def redirect(to: str, status: int = 302) -> Route:
    return lambda req: (status, {"Location": to}, b"")


def gzipped(text: str, ctype: str = "text/plain; charset=utf-8") -> Route:
    data = gzip.compress(text.encode())
    return lambda req: (200, {"Content-Type": ctype, "Content-Encoding": "gzip"}, data)


def drip(chunks: int, delay: float, size: int = 10) -> Route:
    def body() -> Iterator[bytes]:
        for _ in range(chunks):
            yield b"x" * size
            time.sleep(delay)

    return lambda req: (200, {"Content-Type": "text/plain"}, body())


def never(server: Server) -> Route:
    def body() -> Iterator[bytes]:
        server.stopping.wait(30)
        yield b""

    def route(req: Request) -> tuple[int, dict[str, str], Body]:
        server.stopping.wait(30)  # headers never come
        return 200, {}, body()

    return route


def echo(req: Request) -> tuple[int, dict[str, str], Body]:
    data = {
        "method": req.method,
        "path": req.path,
        "query": req.query,
        "headers": {k.lower(): v for k, v in req.headers.items()},
        "body": req.body.decode("utf-8", "replace"),
    }
    return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()
