"""`local-tools serve http`: the HTTP server the openlink browser extension drives, plus
a native JSON API and the web console.

Routes (all JSON unless said otherwise):

| route | answer |
|---|---|
| `GET /health` (no token) | `{status, dir, version}` |
| `POST /auth {token}` (no token) | `{valid}` |
| `GET /auth?token=` (no token) | a console session's cookie, 303 to `/`; wrong token: 401 page |
| `GET /config` | `{rootDir, timeout}` |
| `GET /tools` | `{tools: [{name, description, parameters, input_schema}]}` |
| `POST /exec {name, args or arguments, callId?}` | `{status, output, error?}`, always 200 |
| `GET /prompt` | text/plain: the system prompt teaching a web chat the `<tool>` format |
| `GET /skills` | `{skills: [{name, description}]}` |
| `GET /files?q=` | `{files: [...]}`: workspace files for `@` mentions |
| `POST /v1/tools/{name}` (body: the args) | the envelope, as `Toolbox.arun` returns it |
| `GET /openapi.json` | OpenAPI 3.1 of the native routes |
| `GET /` | the web console (`web_console.py`) |

Thin: the guard (`http_guard.py`) decides who may call and bounds the body; the runner
validates, authorizes, bounds and audits every call (user "default", transport
"http", no asker of its own: the runner falls back to the workspace's pending queue,
else denies naming the rule); `openlink.py` coerces the extension's string arguments
and words the prompt. Does not import the MCP SDK.

While it runs, the server's port is recorded in the state dir (`core/servers.py`): the
web tools and the browser of every local-tools process of that state dir refuse to
connect to it, so a model cannot open its own console and approve itself. The state
dir is made private (0700, files 0600) at start (`serving/startup.py`, as for MCP).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from starlette.routing import Route

from local_tools.search.file_index import FileIndex
from local_tools.security.server_token import TokenSource, token_ok
from local_tools.serving.startup import held_stop_signals, log_to_stderr, start_server
from local_tools.skills import list_skills
from local_tools.toolbox import Toolbox
from local_tools.transports.http_guard import (
    CONSOLE_COOKIE_PATH,
    ConsoleSessions,
    Guard,
    console_cookie,
)
from local_tools.transports.openapi import openapi_document
from local_tools.transports.openlink import (
    coerce_args,
    exec_result,
    prompt_text,
    tools_listing,
)
from local_tools.transports.web_console import close_console, console_heartbeat, console_routes

__all__ = [
    "DEFAULT_PORT",
    "USER_ID",
    "ServerState",
    "build_app",
    "serve",
]

log = logging.getLogger("local_tools.http")

DEFAULT_PORT = 39527
USER_ID = "default"
TRANSPORT = "http"
MAX_QUERY = 200  # characters of a /files query
FILES_LIMIT = 50
LOOPBACK_DISPLAY = "127.0.0.1"


@dataclass
class ServerState:
    """What every route (and the console, see `console.py`) can reach."""

    toolbox: Toolbox
    tokens: TokenSource | Callable[[], str]  # read at each request: a rotation applies
    host: str
    port: int
    sessions: ConsoleSessions = field(default_factory=ConsoleSessions)
    _files: FileIndex | None = field(default=None, repr=False)
    _files_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _openapi: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{_display_host(self.host)}:{self.port}"

    @property
    def token(self) -> str:
        tokens = self.tokens
        return tokens.current() if isinstance(tokens, TokenSource) else tokens()

    @property
    def auth_url(self) -> str:
        return f"{self.url}/auth?token={self.token}"

    def files(self) -> FileIndex:
        with self._files_lock:
            if self._files is None:
                self._files = FileIndex(self.toolbox.workspace)
            return self._files

    def close(self) -> None:
        with self._files_lock:
            if self._files is not None:
                self._files.close()
        self.toolbox.close()


def _display_host(host: str) -> str:
    if host in ("127.0.0.1", "localhost", "0.0.0.0", "::", ""):
        return LOOPBACK_DISPLAY
    return f"[{host}]" if ":" in host else host


def _skills(tb: Toolbox) -> list[dict[str, Any]]:
    """The workspace's skills as `{name, description}` (the `skill` tool's loader)."""
    return list_skills(tb.workspace)


# -- the routes ------------------------------------------------------------------------


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _json_body(request: Request) -> Any:
    """The parsed body; raises ValueError with a message a client can act on."""
    raw = await request.body()
    if not raw.strip():
        raise ValueError("the body is empty; send a JSON object")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"the body is not valid JSON: {exc}") from None


def _routes(state: ServerState) -> list[Any]:
    tb = state.toolbox

    async def health(request: Request) -> JSONResponse:
        from local_tools import __version__

        return JSONResponse({"status": "ok", "dir": str(tb.workspace), "version": __version__})

    async def auth_post(request: Request) -> JSONResponse:
        try:
            data = await _json_body(request)
        except ValueError as exc:
            return _error(400, f"invalid request: {exc}")
        given = data.get("token") if isinstance(data, dict) else None
        if not isinstance(given, str):
            return _error(400, 'invalid request: expected {"token": "..."}')
        return JSONResponse({"valid": token_ok(given, state.token)})

    async def auth_get(request: Request) -> Any:
        token = state.token
        if not token_ok(request.query_params.get("token"), token):
            return HTMLResponse(_WRONG_TOKEN_PAGE, status_code=401)
        # A session of its own, not the token: the cookie may reach another local
        # server (cookies ignore ports), and the token must not. Its name carries the
        # port, so servers on two ports keep theirs apart.
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            console_cookie(state.port),
            state.sessions.new(token),
            path=CONSOLE_COOKIE_PATH,
            httponly=True,
            samesite="strict",
        )
        response.headers["Cache-Control"] = "no-store"
        return response

    async def config(request: Request) -> JSONResponse:
        timeout = tb.config.limits.exec_timeout
        return JSONResponse(
            {
                "rootDir": str(tb.workspace),
                "timeout": int(timeout) if float(timeout).is_integer() else timeout,
            }
        )

    async def tools(request: Request) -> JSONResponse:
        return JSONResponse(tools_listing(tb))

    async def exec_(request: Request) -> JSONResponse:
        try:
            data = await _json_body(request)
        except ValueError as exc:
            return _exec_error(str(exc))
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str) or not name:
            return _exec_error('expected {"name": "<tool>", "args": {...}}')
        args = data.get("args")
        if args is None:
            args = data.get("arguments")
        if args is None:
            args = {}
        call_args = coerce_args(tb.registry.resolve(name), args)
        envelope = await tb.arun(name, call_args, user_id=USER_ID, transport=TRANSPORT)
        return JSONResponse(exec_result(tb, envelope))

    async def prompt(request: Request) -> PlainTextResponse:
        return PlainTextResponse(prompt_text(tb, _skills(tb)))

    async def skills(request: Request) -> JSONResponse:
        return JSONResponse({"skills": _skills(tb)})

    async def files(request: Request) -> JSONResponse:
        q = request.query_params.get("q", "")
        if len(q) > MAX_QUERY:
            return _error(400, f"q too long (at most {MAX_QUERY} characters)")
        index = state.files()
        found = await anyio.to_thread.run_sync(index.search, q, FILES_LIMIT)
        return JSONResponse({"files": found})

    async def native(request: Request) -> JSONResponse:
        raw = await request.body()
        if raw.strip():
            try:
                args = json.loads(raw)
            except (UnicodeDecodeError, ValueError) as exc:
                return _error(400, f"the body is not valid JSON: {exc}")
        else:
            args = {}
        name = request.path_params["name"]
        envelope = await tb.arun(name, args, user_id=USER_ID, transport=TRANSPORT)
        return JSONResponse(envelope)

    async def openapi(request: Request) -> JSONResponse:
        if state._openapi is None:
            state._openapi = openapi_document(tb, state.url)
        return JSONResponse(state._openapi)

    return [
        Route("/health", health, methods=["GET"]),
        Route("/auth", auth_post, methods=["POST"]),
        Route("/auth", auth_get, methods=["GET"]),
        Route("/config", config, methods=["GET"]),
        Route("/tools", tools, methods=["GET"]),
        Route("/exec", exec_, methods=["POST"]),
        Route("/prompt", prompt, methods=["GET"]),
        Route("/skills", skills, methods=["GET"]),
        Route("/files", files, methods=["GET"]),
        Route("/v1/tools/{name}", native, methods=["POST"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]


def _exec_error(message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "output": message, "error": message}, status_code=400)


_WRONG_TOKEN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>local-tools: wrong token</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 3em auto">
<h1>Wrong or missing token</h1>
<p>Open the exact URL that <code>local-tools serve http</code> printed at start
(<code>http://127.0.0.1:PORT/auth?token=...</code>).</p>
</body></html>
"""


# -- the app ----------------------------------------------------------------------------


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return JSONResponse(
        {"error": exc.detail}, status_code=exc.status_code, headers=dict(exc.headers or {})
    )


async def _server_error(request: Request, exc: Exception) -> JSONResponse:
    # Logged by the guard, which sees the exception next (Starlette re-raises it).
    return JSONResponse({"error": "internal error (see the server log)"}, status_code=500)


def build_app(state: ServerState) -> Guard:
    """The guarded ASGI app for `state` (the port must be the one clients connect to)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # List the files in the background now, so the first `@` search is quick.
        threading.Thread(target=state.files().search, args=("", 1), daemon=True).start()
        beat = asyncio.create_task(console_heartbeat(state.toolbox, state.url))
        try:
            yield
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
            await anyio.to_thread.run_sync(state.close)

    app = Starlette(
        routes=[*_routes(state), *console_routes(state.toolbox)],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
        lifespan=lifespan,
    )
    return Guard(
        app,
        token=lambda: state.token,
        host=state.host,
        port=state.port,
        allowed_origins=state.toolbox.config.http.allowed_origins,
        sessions=state.sessions,
    )


def serve(
    workspace: str | Path | None = None,
    config: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    state_dir: str | Path | None = None,
    out: TextIO | None = None,
    profile: str | None = None,
) -> None:
    """Run the server until interrupted. `port=0` picks a free port; the URL with the
    token is printed to `out` (stdout) once the socket is bound. Raises OSError when the
    address is taken, ConfigError for a broken config or an unknown `profile`."""
    import uvicorn

    out = out or sys.stdout
    bind_host = "127.0.0.1" if host == "localhost" else host
    tb = Toolbox(workspace, config, state_dir=state_dir, profile=profile)
    start = start_server(tb.state_dir, "http", bind_host, port, on_failure=tb.close)
    state = ServerState(tb, start.tokens, bind_host, start.port)
    uv_config = uvicorn.Config(
        build_app(state),
        log_level="warning",
        lifespan="on",
        access_log=False,
        server_header=False,
        timeout_keep_alive=5,
        limit_concurrency=200,
        timeout_graceful_shutdown=5,
    )

    class _Server(uvicorn.Server):
        # A console's event stream never ends by itself: end it when shutdown starts.
        def handle_exit(self, sig: int, frame: Any) -> None:
            close_console(tb)
            super().handle_exit(sig, frame)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            for sig in held:  # arrived before uvicorn's handlers: stop now
                self.handle_exit(sig, None)

    log_to_stderr()
    for failure in tb.registry.failures:  # the other tools still serve
        log.error("custom tools not loaded from %s: %s", failure.source, failure.error)
    start.listen()  # recorded before the URL is printed; removed when the server stops
    try:
        with held_stop_signals() as held:
            print(
                f"local-tools serve http: workspace {tb.workspace}\n"
                f"openlink URL (paste it into the openlink extension's popup):\n"
                f"  {state.auth_url}\n"
                "Open the same URL in a browser for the web console. Ctrl-C stops the server.",
                file=out,
                flush=True,
            )
            if _display_host(bind_host) != LOOPBACK_DISPLAY:
                log.warning(
                    "bound to %s, not loopback: the openlink extension only calls 127.0.0.1", host
                )
            _Server(uv_config).run(sockets=[start.sock])
    finally:
        start.stop()
