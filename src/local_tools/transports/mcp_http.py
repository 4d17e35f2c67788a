"""`serve mcp --transport http`: the MCP server over streamable HTTP on loopback.

Host and Origin must be loopback (DNS rebinding), every request carries the state dir's
bearer token (read at each request: a rotation applies at once), and a client's DELETE
ends its session here as well as in the SDK (the commands it left running end too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from local_tools.security.server_token import bearer_ok
from local_tools.serving.startup import start_server, token_hint
from local_tools.transports.mcp import SESSION_HEADER, LocalToolsMcp, log, stderr_logging

__all__ = ["serve_http"]


async def serve_http(app: LocalToolsMcp, host: str = "127.0.0.1", port: int = 39528) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp; Host and Origin must be loopback."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    stderr_logging()
    # Always on, whatever the bind address: a page in a browser must not reach the
    # tools through DNS rebinding (CVE-2025-66414's class).
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    starlette = app.server().streamable_http_app(transport_security=security, host=host)
    start = start_server(app.state_dir, "mcp", host, port, on_failure=app.close)
    guarded = _require_bearer(_ending_sessions(starlette, app), start.tokens.current)
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    start.listen()
    try:
        log.warning("local-tools MCP server on http://%s:%d/mcp", host, start.port)
        log.warning("%s", token_hint(start.state_dir, start.token, start.made_now))
        await uvicorn.Server(config).serve(sockets=[start.sock])
    finally:
        start.stop()
        app.close()


def _ending_sessions(asgi: Any, app: LocalToolsMcp) -> Any:
    """ASGI wrapper: a client's DELETE ends its session here too, not only in the SDK."""

    async def ending(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "DELETE":
            return await asgi(scope, receive, send)
        status = 0

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await asgi(scope, receive, watch)
        session = dict(scope.get("headers") or []).get(SESSION_HEADER.encode())
        if session and 200 <= status < 300:  # the SDK knew the session and ended it
            await anyio.to_thread.run_sync(app.end_session, session.decode("latin-1"))

    return ending


def _require_bearer(app: Any, token: Callable[[], str]) -> Any:
    """ASGI wrapper: HTTP requests without the server's bearer token get 401 (`token`
    is asked at each request: a rotated token applies at once)."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"").decode("latin-1")
            if not bearer_ok(given, token()):
                body = b'{"error": "missing or wrong bearer token (see the server log)"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="local-tools"'),
                ]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded
