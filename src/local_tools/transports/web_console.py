"""The web console: the page where a person watches calls and answers what waits.

Whichever door a call came through (HTTP, MCP, the CLI in another terminal), the
processes of one workspace share its state dir: the console lists the workspace's
pending queue (`interact/pending.py`) and its rows of the audit log, and answers
requests through the queue. Routes (the HTTP server mounts them behind its guard):

    GET  /                         the page (public: it carries no data)
    GET  /console/static/{file}    its CSS, JS and icon (public)
    GET  /console/api/state        workspace, pending requests, history, recent calls,
                                   the todo lists
    GET  /console/api/events       server-sent events: `state` on connect, then
                                   `pending`, `calls` and `todos` as they change
    POST /console/api/answer       {id, answer}: validated, stored with who answered and
                                   how ("console-session": only a console session may
                                   answer, never the API token; the guard sees to it
                                   and this route checks again)
    /console/api/checkpoints...    the Changes panel: checkpoints, diffs, undo
                                   (`console_changes.py`; a console session only)

One poll loop per console reads the SQLite files every `POLL_INTERVAL` seconds while
at least one event stream is open (and stats the todo file, reading it only when it
was replaced), and fans the changes out to every stream; the reading itself is
`interact/console_state.py`, and what an answer may be is `interact/console_answers.py`.
`console_heartbeat` keeps the console "live" so that calls queue their requests here
instead of being denied; `close_console` ends the event streams (a server shutting
down must call it, or wait for them: uvicorn waits for open responses).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import threading
import uuid
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from local_tools.interact.base import MAX_REVIEW_CHARS
from local_tools.interact.console_answers import BadAnswer, validate_answer
from local_tools.interact.console_state import ConsoleState
from local_tools.transports.console_changes import changes_routes
from local_tools.transports.http_guard import AUTH_SCOPE_KEY, CONSOLE_SESSION

if TYPE_CHECKING:
    from local_tools.toolbox import Toolbox

__all__ = ["close_console", "console_heartbeat", "console_routes"]

_log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).with_name("console_static")
_STATIC_TYPES = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console_changes.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}

POLL_INTERVAL = 0.3  # seconds between reads of the SQLite files while a page is open
PING_INTERVAL = 15.0  # an SSE comment keeps proxies and the browser from timing out
BEAT_INTERVAL = 2.0  # the pending queue counts a console live for 10 s after a beat
# An answer is small, except a reviewed draft sent back edited: MAX_REVIEW_CHARS
# characters in the worst JSON encoding (one beyond the BMP escaped as two \uXXXX,
# 12 bytes), plus slack for the rest of the body.
MAX_BODY = 12 * MAX_REVIEW_CHARS + 64 * 1024

# The page runs no inline script and loads nothing from elsewhere; nobody may frame
# it (an approval button under someone else's overlay is a clickjacking target).
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_API_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


# --------------------------------------------------------------------------- the feed


class _Feed:
    """The one poll loop behind every event stream of a console, over its `ConsoleState`."""

    def __init__(self, tb: Toolbox) -> None:
        self.tb = tb
        self.data = ConsoleState(tb)
        self._streams: set[asyncio.Queue[str | None]] = set()
        # Set when a page connects, so the heartbeat beats at once rather than within
        # its interval (an ask in between would be denied).
        self.opened: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._start_lock: asyncio.Lock | None = None
        # Set from any thread (a signal handler, the heartbeat's end): streams end.
        self._closed = threading.Event()

    def state(self) -> dict[str, Any]:
        return self.data.state()

    # -- streams

    async def subscribe(self) -> asyncio.Queue[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        if self._closed.is_set():
            queue.put_nowait(None)
            return queue
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._task is None or self._task.done():
                # The baseline is read before the caller's snapshot: a call logged in
                # between is in both (the page drops duplicates), never in neither.
                await asyncio.to_thread(self.data.baseline)
                self._streams.add(queue)
                self._task = asyncio.create_task(self._run(), name="local-tools console feed")
            else:
                self._streams.add(queue)
        if self.opened is not None:
            self.opened.set()
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str | None]) -> None:
        self._streams.discard(queue)

    @property
    def watched(self) -> bool:
        """Whether a console page is open (an event stream is connected)."""
        return bool(self._streams)

    def close(self) -> None:
        """End every event stream within a poll interval. Thread-safe, final."""
        self._closed.set()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def _run(self) -> None:
        try:
            while self._streams and not self._closed.is_set():
                await asyncio.sleep(POLL_INTERVAL)
                try:
                    messages = await asyncio.to_thread(self._changes)
                except Exception:  # a locked or broken file must not end the loop
                    _log.warning("console: cannot read the state dir", exc_info=True)
                    continue
                for message in messages:
                    for stream in tuple(self._streams):
                        stream.put_nowait(message)
        finally:
            if self._closed.is_set():
                for stream in tuple(self._streams):
                    stream.put_nowait(None)
                self.data.close()

    def _changes(self) -> list[str]:
        return [_event(name, data) for name, data in self.data.changes()]


def _event(name: str, data: Any) -> str:
    # json.dumps never writes a raw newline, so the data is one `data:` line.
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


_FEEDS: weakref.WeakKeyDictionary[Toolbox, _Feed] = weakref.WeakKeyDictionary()


def _feed(tb: Toolbox) -> _Feed:
    feed = _FEEDS.get(tb)
    if feed is None or feed.closed:
        feed = _FEEDS[tb] = _Feed(tb)
    return feed


# --------------------------------------------------------------------------- routes


def console_routes(tb: Toolbox) -> list[BaseRoute]:
    """The console's routes for `tb`'s workspace (mount them behind the server's guard)."""
    feed = _feed(tb)

    async def page(request: Request) -> Response:
        return _static_response("index.html", "text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["file"]
        media_type = _STATIC_TYPES.get(name)
        if media_type is None:
            return Response("not found", status_code=404, media_type="text/plain")
        return _static_response(name, media_type)

    async def state(request: Request) -> Response:
        return JSONResponse(await asyncio.to_thread(feed.state), headers=_API_HEADERS)

    async def events(request: Request) -> Response:
        return StreamingResponse(
            _stream(feed),
            media_type="text/event-stream",
            headers={**_API_HEADERS, "X-Accel-Buffering": "no"},
        )

    async def answer(request: Request) -> Response:
        # Defence in depth: whatever guard this is mounted behind, only a console
        # session answers (the guard marks it in the scope).
        auth = request.scope.get(AUTH_SCOPE_KEY)
        if auth != CONSOLE_SESSION:
            return _error(403, "only a person in the web console can answer (a console session)")
        body = await request.body()
        if len(body) > MAX_BODY:
            return _error(413, "the answer is too large")
        try:
            data = json.loads(body)
        except ValueError:
            return _error(400, "the body must be JSON: {id, answer}")
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return _error(400, "the body must be JSON: {id, answer}")
        item = await asyncio.to_thread(tb.pending.get, data["id"])
        if item is None:
            return _error(404, "no such request")
        if item.status != "pending":
            return _error(409, f"this request is no longer pending ({item.status})")
        try:
            stored = validate_answer(item, data.get("answer"))
        except BadAnswer as exc:
            return _error(400, str(exc))
        client = request.client.host if request.client else "unknown address"
        by = f"web console ({client})"
        if not await asyncio.to_thread(tb.pending.answer, item.id, stored, by, auth):
            return _error(409, "this request was answered or withdrawn meanwhile")
        _log.info("console: request %s (%s) answered by %s: %s", item.id, item.kind, by, stored)
        return JSONResponse(
            {"id": item.id, "status": "answered", "answer": stored}, headers=_API_HEADERS
        )

    return [
        Route("/", page, methods=["GET"]),
        Route("/console/static/{file}", static, methods=["GET"]),
        Route("/console/api/state", state, methods=["GET"]),
        Route("/console/api/events", events, methods=["GET"]),
        Route("/console/api/answer", answer, methods=["POST"]),
        *changes_routes(tb),
    ]


async def _stream(feed: _Feed) -> AsyncIterator[str]:
    queue = await feed.subscribe()
    try:
        yield "retry: 2000\n\n"
        if queue.empty():  # not closed already
            yield _event("state", await asyncio.to_thread(feed.state))
        while True:
            try:
                message = await asyncio.wait_for(queue.get(), PING_INTERVAL)
            except asyncio.TimeoutError:
                message = ": ping\n\n"
            if message is None:
                return
            yield message
    finally:
        feed.unsubscribe(queue)


def _static_response(name: str, media_type: str) -> Response:
    return Response(
        (STATIC_DIR / name).read_bytes(), media_type=media_type, headers=_SECURITY_HEADERS
    )


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=_API_HEADERS)


# --------------------------------------------------------------------------- lifetime


async def console_heartbeat(tb: Toolbox, url: str) -> None:
    """Keep the console live for `tb`'s workspace while a console page is open.

    Run it as a task for the server's lifetime. While a page is open (an event stream
    is connected), calls in any process queue their questions for it; with no page
    open the beats stop and, once the last one is stale, calls are denied naming the
    rule instead of waiting for a person who is not looking (a page reconnecting
    within the stale window loses nothing). Cancelled, it says the console is gone
    (calls stop queueing at once) and ends the event streams.
    """
    console_id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    feed = _feed(tb)
    feed.opened = asyncio.Event()
    try:
        while True:
            if feed.watched:
                try:
                    await asyncio.to_thread(tb.pending.beat, console_id, url)
                except sqlite3.Error as exc:  # locked for longer than the busy timeout
                    _log.warning("console: heartbeat failed: %s", exc)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(feed.opened.wait(), BEAT_INTERVAL)
            feed.opened.clear()
    finally:
        with contextlib.suppress(sqlite3.Error):
            tb.pending.console_gone(console_id)
        close_console(tb)


def close_console(tb: Toolbox) -> None:
    """End the console's event streams (within `POLL_INTERVAL`). Thread-safe.

    Call it when the server starts shutting down: uvicorn waits for open responses
    before it runs the lifespan shutdown, and an event stream never ends by itself.
    Browsers reconnect on their own when a new server comes up.
    """
    feed = _FEEDS.get(tb)
    if feed is not None:
        feed.close()
