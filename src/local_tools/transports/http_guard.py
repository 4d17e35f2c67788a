"""The ASGI middleware in front of `serve http`: who may talk to it, and how much.

Decisions, in order, for every HTTP request (the first refusal answers, as JSON):

1. **Host** must be the bound address, 127.0.0.1, localhost or [::1], with the port
   (a page on another name that resolves to 127.0.0.1 — DNS rebinding — is refused):
   421. A path with `.` or `..` segments: 400.
2. **Origin**, when sent, must be the console's own (http://127.0.0.1:PORT,
   http://localhost:PORT, http://[::1]:PORT, http://BOUND:PORT) or match
   `[http] allowed_origins` (default: `chrome-extension://*`, `moz-extension://*`); any
   other web page is refused (CSRF): 403. No Origin (curl, scripts, a typed URL) is fine.
3. **CORS** headers are added only for an allowed Origin: the origin echoed,
   `Vary: Origin`, methods GET/POST/OPTIONS, headers Content-Type/Authorization.
   `OPTIONS` (a preflight) is answered 204 here, before authentication.
4. **Token**: every path except `/health`, `/auth`, `/` and `/console/static/...` needs
   `Authorization: Bearer <token>` (constant-time compare; the token is read again when
   `local-tools token --rotate` replaced it); under `/console/` a console session is
   accepted instead: 401. `/console/api/answer` takes a console session only, never
   the token: whoever holds the token (a script, a model that read it) must not answer
   its own approvals. A console session is the `local_tools_console_<port>` cookie
   that `GET /auth?token=` sets: a random value, not the token, kept in this process's
   memory only (it ends with the server, or when the token is rotated), sent back only
   under `/console/` (`Path=/console/`, HttpOnly, SameSite=Strict). The request's
   scope says which it was (`AUTH_SCOPE_KEY`: "bearer" or "console-session").
5. **Body**: a request with a body must be JSON (`application/json` or `*/*+json`): 415.
   It is read here, counting bytes as they arrive (Content-Length is not trusted),
   before the app sees it: over `max_body` bytes, 413; not complete within
   `body_timeout` seconds, 408; the client gone, no answer.
6. Anything the app raises that nobody handled becomes a JSON 500 without traceback
   (logged with one), and the server keeps serving.

Every response also gets `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY`
(the console must not be framed by another page) and `Referrer-Policy: no-referrer`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any

from local_tools.security.server_token import bearer_ok, token_ok

__all__ = [
    "AUTH_SCOPE_KEY",
    "BODY_TIMEOUT",
    "CONSOLE_COOKIE_PATH",
    "CONSOLE_SESSION",
    "MAX_BODY",
    "ConsoleSessions",
    "Guard",
    "console_cookie",
    "origin_matches",
]

log = logging.getLogger("local_tools.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 10 * 1024 * 1024
BODY_TIMEOUT = 30.0
CONSOLE_COOKIE_PATH = "/console/"
AUTH_SCOPE_KEY = "local_tools.auth"  # how the request was authenticated, for the routes
CONSOLE_SESSION = "console-session"  # the scope value (and the audit's word) for a session
PUBLIC_PATHS = frozenset({"/health", "/auth", "/"})
PUBLIC_PREFIXES = ("/console/static/",)
COOKIE_PREFIX = CONSOLE_COOKIE_PATH
SESSION_ONLY_PATHS = frozenset({"/console/api/answer"})
# The console's undo history: a person's view and a person's undo, not the API's.
SESSION_ONLY_PREFIXES = ("/console/api/checkpoints",)
MAX_SESSIONS = 32  # consoles open at once (browsers, tabs that signed in again)
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_JSON_TYPE = re.compile(r"application/(?:[\w.+-]+\+)?json", re.IGNORECASE)
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]
_CORS_HEADERS = [
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"Content-Type, Authorization"),
    (b"access-control-max-age", b"600"),
]


def origin_matches(origin: str, pattern: str) -> bool:
    """`pattern` with `*` matching any text, whole and case-insensitive."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, origin, re.IGNORECASE) is not None


def console_cookie(port: int) -> str:
    """The console cookie's name for the server on `port`: browsers send a cookie of
    127.0.0.1 to every port, so two servers must not read (or overwrite) each other's."""
    return f"local_tools_console_{port}"


class ConsoleSessions:
    """The console sessions `GET /auth` opened: random values (only their digests are
    kept), in memory, each valid while the token it was opened with is the server's."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._by_digest: OrderedDict[bytes, str] = OrderedDict()  # digest -> token then

    def new(self, token: str) -> str:
        value = secrets.token_urlsafe(32)
        with self._lock:
            self._by_digest[_digest(value)] = token
            while len(self._by_digest) > self.limit:  # the oldest sign-in goes first
                self._by_digest.popitem(last=False)
        return value

    def valid(self, value: str | None, token: str) -> bool:
        if not value:
            return False
        with self._lock:
            opened_with = self._by_digest.get(_digest(value))
        return opened_with is not None and token_ok(opened_with, token)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _ClientGone(Exception):
    pass


class Guard:
    """Wraps the app; see the module docstring for what it refuses and why."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | Callable[[], str],
        host: str,
        port: int,
        allowed_origins: Iterable[str] = (),
        max_body: int = MAX_BODY,
        body_timeout: float = BODY_TIMEOUT,
        sessions: ConsoleSessions | None = None,
    ) -> None:
        self.app = app
        self.token: Callable[[], str] = token if callable(token) else (lambda: token)
        self.sessions = sessions if sessions is not None else ConsoleSessions()
        self.cookie_name = console_cookie(port)
        self.max_body = max_body
        self.body_timeout = body_timeout
        bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
        names = dict.fromkeys(n.lower() for n in (*_LOOPBACK_NAMES, bound))
        self.hosts = {f"{n}:{port}" for n in names}
        if port == 80:
            self.hosts.update(names)
        self.console_origins = {f"http://{h}" for h in self.hosts}
        self.allowed_origins = tuple(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        cors: str | None = None

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers") or [])
                present = {name.lower() for name, _ in headers}
                headers.extend(h for h in _SECURITY_HEADERS if h[0] not in present)
                headers.append((b"vary", b"Origin"))
                if cors is not None:
                    headers.append((b"access-control-allow-origin", cors.encode("latin-1")))
                    headers.extend(_CORS_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        try:
            headers = _headers(scope)
            cors = self._check_origin(scope, headers)
            if scope["method"] == "OPTIONS":
                await _respond(sending, 204, None)
                return
            self._check_token(scope, headers)
            body = await self._read_body(scope, headers, receive)
        except _Refused as refused:
            await _respond(sending, refused.status, {"error": refused.message})
            return
        except _ClientGone:
            return

        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            await self.app(scope, replay, sending)
        except Exception:
            log.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if not started:
                await _respond(sending, 500, {"error": "internal error (see the server log)"})

    # -- the checks ----------------------------------------------------------------

    def _check_origin(self, scope: Scope, headers: dict[bytes, bytes]) -> str | None:
        """Host and Origin; returns the origin to echo in CORS headers, if any."""
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.hosts:
            raise _Refused(
                421,
                f"Host {host or '(none)'!r} is not this server's: use "
                f"{min(self.console_origins)} (DNS rebinding protection)",
            )
        path = scope.get("path", "")
        if any(part in (".", "..") for part in path.split("/")):
            raise _Refused(400, "'.' and '..' are not allowed in paths")
        raw = headers.get(b"origin")
        if raw is None:
            return None
        origin = raw.decode("latin-1")
        if origin.lower() in self.console_origins or any(
            origin_matches(origin, p) for p in self.allowed_origins
        ):
            return origin
        raise _Refused(
            403,
            f"Origin {origin!r} may not call this server "
            "(add it to [http] allowed_origins in local-tools.toml to allow it)",
        )

    def _check_token(self, scope: Scope, headers: dict[bytes, bytes]) -> None:
        path: str = scope.get("path", "")
        scope[AUTH_SCOPE_KEY] = None
        if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            return
        token = self.token()
        if path.startswith(COOKIE_PREFIX) and self.sessions.valid(
            _cookie(headers, self.cookie_name), token
        ):
            scope[AUTH_SCOPE_KEY] = CONSOLE_SESSION
            return
        if path in SESSION_ONLY_PATHS or path.startswith(SESSION_ONLY_PREFIXES):
            raise _Refused(
                403,
                "only a person in the web console can do this: open the URL that serve http "
                "printed in a browser (the API token cannot answer a request or undo)",
            )
        if bearer_ok(headers.get(b"authorization", b"").decode("latin-1"), token):
            scope[AUTH_SCOPE_KEY] = "bearer"
            return
        raise _Refused(
            401, "unauthorized: send Authorization: Bearer <the token serve http printed>"
        )

    async def _read_body(
        self, scope: Scope, headers: dict[bytes, bytes], receive: Receive
    ) -> bytes:
        length = headers.get(b"content-length")
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        has_body = chunked or (length is not None and length.strip() not in (b"", b"0"))
        if has_body and scope["method"] in _BODY_METHODS:
            kind = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip()
            if not _JSON_TYPE.fullmatch(kind):
                got = kind or "no Content-Type"
                raise _Refused(415, f"the body must be JSON (application/json), not {got}")
        if length is not None and length.strip().isdigit() and int(length) > self.max_body:
            raise _Refused(413, f"the body is larger than {self.max_body} bytes")
        chunks: list[bytes] = []
        size = 0
        # A timer that cancels this task, rather than anyio.fail_after: the body of a
        # small request is there at the first receive, and a cancel scope per request
        # costs more than the rest of this method.
        task = asyncio.current_task()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            if task is not None:
                task.cancel()

        timer = asyncio.get_running_loop().call_later(self.body_timeout, expire)
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _ClientGone
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    raise _Refused(413, f"the body is larger than {self.max_body} bytes")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        except asyncio.CancelledError:
            if not expired:
                raise
            if task is not None and hasattr(task, "uncancel"):
                task.uncancel()
            raise _Refused(408, f"the body did not arrive within {self.body_timeout:g} s") from None
        finally:
            timer.cancel()
        return b"".join(chunks)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """Request headers by lowercase name; a repeated header keeps its first value."""
    out: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or ():
        out.setdefault(name.lower(), value)
    return out


def _cookie(headers: dict[bytes, bytes], name: str) -> str | None:
    raw = headers.get(b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


async def _respond(send: Send, status: int, payload: dict[str, Any] | None) -> None:
    body = b"" if payload is None else json.dumps(payload, ensure_ascii=False).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    if payload is not None:
        headers.append((b"content-type", b"application/json"))
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="local-tools"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
