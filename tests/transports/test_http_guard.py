"""The guard in front of `serve http`, on a real uvicorn in a thread, with the cases the
real app cannot produce on purpose: a slow body, an app that raises."""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from local_tools.serving.startup import bind_socket
from local_tools.transports.http_guard import Guard, origin_matches
from local_tools.transports.http_server import _server_error

TOKEN = "f" * 64


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"size": len(await request.body())})


async def _boom(request: Request) -> JSONResponse:
    raise RuntimeError("secret detail")


async def _raw_boom(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        raise RuntimeError("secret detail")


@contextmanager
def running(app: Any, **guard: Any) -> Iterator[str]:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    wrapped = Guard(app, token=TOKEN, host="127.0.0.1", port=port, **guard)
    server = uvicorn.Server(uvicorn.Config(wrapped, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _starlette() -> Starlette:
    return Starlette(
        routes=[Route("/echo", _echo, methods=["POST"]), Route("/boom", _boom)],
        exception_handlers={Exception: _server_error},
    )


def test_slow_body_is_408_and_the_server_keeps_serving() -> None:
    with running(_starlette(), body_timeout=0.5) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(
                b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a": 1'
                % (port, TOKEN.encode())
            )
            started = time.monotonic()
            answer = b""
            # Headers and body may come in separate segments: read to the end.
            while chunk := s.recv(65536):
                answer += chunk
                head, _, body = answer.partition(b"\r\n\r\n")
                length = re.search(rb"content-length: (\d+)", head, re.I)
                if length and len(body) >= int(length.group(1)):
                    break
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"did not arrive within 0.5 s" in answer
        assert time.monotonic() - started < 5
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            assert c.post("/echo", json={"a": 1}).json() == {"size": 7}


def test_unexpected_exceptions_are_a_json_500_without_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="local_tools.http")
    for app in (_starlette(), _raw_boom):
        with running(app) as url, httpx.Client(base_url=url) as c:
            c.headers["Authorization"] = f"Bearer {TOKEN}"
            r = c.get("/boom")
            assert r.status_code == 500
            assert r.json() == {"error": "internal error (see the server log)"}
            assert "secret" not in r.text and "Traceback" not in r.text
            if app is not _raw_boom:
                assert c.post("/echo", json={}).json() == {"size": 2}  # still serving
    logged = [rec for rec in caplog.records if rec.name == "local_tools.http"]
    assert len(logged) == 2 and all(rec.exc_info for rec in logged)
    assert "GET /boom failed" in logged[0].getMessage()


def test_body_limit_counts_streamed_bytes() -> None:
    with running(_starlette(), max_body=1000) as url, httpx.Client(base_url=url) as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        assert c.post(
            "/echo", content=b" " * 1000, headers={"Content-Type": "application/json"}
        ).json() == {"size": 1000}

        def parts() -> Iterator[bytes]:
            yield from (b" " * 300 for _ in range(4))

        r = c.post("/echo", content=parts(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert c.post("/echo", json={}).json() == {"size": 2}


@pytest.mark.parametrize(
    ("origin", "pattern", "ok"),
    [
        ("chrome-extension://abcdef", "chrome-extension://*", True),
        ("CHROME-EXTENSION://abcdef", "chrome-extension://*", True),
        ("chrome-extension://abcdef", "moz-extension://*", False),
        ("https://chat.example.com", "https://*.example.com", True),
        ("https://example.com", "https://*.example.com", False),
        ("https://evil.com?.example.com", "https://x.example.com", False),
        ("https://x.example.com.evil.com", "https://*.example.com", False),
    ],
)
def test_origin_patterns(origin: str, pattern: str, ok: bool) -> None:
    assert origin_matches(origin, pattern) is ok
