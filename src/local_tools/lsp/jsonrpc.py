"""JSON-RPC 2.0 over a language server's stdin/stdout (LSP's Content-Length framing).

Threads, not asyncio: a server outlives any one call and any one event loop (the sync
`Toolbox.run` facade runs a loop per call), so one reader thread per server parses
messages and completes `concurrent.futures.Future`s that async callers wrap. The
server's requests to us (workspace/configuration, client/registerCapability, ...) are
answered on the reader thread by `on_request`; its notifications go to
`on_notification`. A server that dies fails every pending request with `ServerGone`; one
that breaks the framing (a bad or huge Content-Length, a body that is not JSON) is
killed and does the same.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import IO, Any

__all__ = ["MAX_MESSAGE_BYTES", "JsonRpc", "RpcError", "ServerGone", "kill_group"]

log = logging.getLogger(__name__)

# A workspace symbol list of a big project is a few MB; anything far larger is a
# broken or hostile server, and reading it would hold that much in memory.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Unsent input a server may leave waiting before it counts as gone (and is killed).
MAX_QUEUED_BYTES = 256 * 1024 * 1024
_MAX_HEADER_LINES = 32  # LSP has two header fields
_METHOD_NOT_FOUND = -32601


class RpcError(Exception):
    """The server answered a request with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message


class ServerGone(Exception):
    """The server exited (or broke the protocol) before answering."""


NotificationHandler = Callable[[str, Any], None]
RequestHandler = Callable[[str, Any], Any]


class JsonRpc:
    """One connection to a started server process (its stdin and stdout are pipes)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        on_notification: NotificationHandler,
        on_request: RequestHandler,
        name: str = "server",
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.name = name
        self._stdin: IO[bytes] = proc.stdin
        self._stdout: IO[bytes] = proc.stdout
        self._on_notification = on_notification
        self._on_request = on_request
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._gone: str | None = None
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._queued = 0
        threading.Thread(target=self._write_loop, name=f"lsp-{name}-in", daemon=True).start()
        self._reader = threading.Thread(target=self._read_loop, name=f"lsp-{name}", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return self._gone is None and self.proc.poll() is None

    @property
    def gone_reason(self) -> str | None:
        return self._gone

    def request(self, method: str, params: Any) -> tuple[int, Future[Any]]:
        """Send a request; its id (to cancel it) and a future of its result."""
        future: Future[Any] = Future()
        with self._lock:
            if self._gone is not None:
                future.set_exception(ServerGone(self._gone))
                return 0, future
            msg_id = next(self._ids)
            self._pending[msg_id] = future
        try:
            self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        except ServerGone as exc:
            self._fail_all(str(exc))
        return msg_id, future

    def cancel(self, msg_id: int) -> None:
        """Ask the server to drop a request (its future then fails, or answers anyway)."""
        with self._lock:
            future = self._pending.pop(msg_id, None)
        if future is None:
            return
        future.cancel()
        with contextlib.suppress(ServerGone):
            self.notify("$/cancelRequest", {"id": msg_id})

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        self._fail_all("the connection was closed")
        self._outbox.put(None)
        for stream in (self._stdin, self._stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    # --- internals ---------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        """Queue a message for the writer thread: never blocks, so a server that stops
        reading its input cannot hold a call (or close) past its own deadline."""
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._write_lock:
            if self._gone is not None:
                raise ServerGone(self._gone)
            if self._queued + len(data) > MAX_QUEUED_BYTES:
                reason = f"{self.name} stopped reading its input ({self._queued} bytes waiting)"
                self._gone = reason
                with contextlib.suppress(OSError):
                    self.proc.kill()
                raise ServerGone(reason)
            self._queued += len(data)
            self._outbox.put(data)

    def _write_loop(self) -> None:
        while True:
            data = self._outbox.get()
            if data is None:
                return
            try:
                self._stdin.write(data)
                self._stdin.flush()
            except (OSError, ValueError) as exc:
                self._fail_all(f"{self.name} stopped reading its input ({exc})")
                return
            with self._write_lock:
                self._queued -= len(data)

    def _fail_all(self, reason: str) -> None:
        with self._lock:
            if self._gone is None:
                self._gone = reason
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ServerGone(reason))

    def _read_loop(self) -> None:
        reason = f"{self.name} exited"
        broken = False
        try:
            while True:
                message = self._read_message()
                if message is None:
                    break
                self._dispatch(message)
        except ServerGone as exc:
            reason, broken = str(exc), True
        except Exception as exc:  # a reader that dies must still fail the waiters
            log.exception("reading from %s failed", self.name)
            reason = f"{self.name} broke the protocol ({type(exc).__name__}: {exc})"
            broken = True
        if broken:
            # Nobody reads its output any more: a server left running would block on
            # it (and hold its memory) until the toolbox closes.
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2)
        code = self.proc.poll()
        if code is not None and not broken:
            reason = f"{reason} (exit status {code})"
        self._fail_all(reason)

    def _read_message(self) -> dict[str, Any] | None:
        length = -1
        for _ in range(_MAX_HEADER_LINES):
            line = self._stdout.readline(8192)
            if not line:
                return None  # end of output: the server is gone
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise ServerGone(f"{self.name} sent a bad Content-Length") from None
        else:  # output that never ends a header is not LSP: stop reading it
            raise ServerGone(f"{self.name} sent a header of more than {_MAX_HEADER_LINES} lines")
        if length < 0 or length > MAX_MESSAGE_BYTES:
            raise ServerGone(f"{self.name} sent a message of unusable length {length}")
        body = self._stdout.read(length)
        if len(body) < length:
            return None
        try:
            parsed = json.loads(body)
        except ValueError:
            raise ServerGone(f"{self.name} sent a message that is not JSON") from None
        return parsed if isinstance(parsed, dict) else {}

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        msg_id = message.get("id")
        if isinstance(method, str):
            params = message.get("params")
            if msg_id is None:
                try:
                    self._on_notification(method, params)
                except Exception:
                    log.exception("handling %s from %s failed", method, self.name)
                return
            self._answer(msg_id, method, params)
            return
        if not isinstance(msg_id, int):
            return
        with self._lock:
            future = self._pending.pop(msg_id, None)
        if future is None or future.done():
            return  # cancelled meanwhile
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            future.set_exception(
                RpcError(code if isinstance(code, int) else 0, str(error.get("message", "")))
            )
        else:
            future.set_result(message.get("result"))

    def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        try:
            result = self._on_request(method, params)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        except LookupError:
            reply = {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": _METHOD_NOT_FOUND, "message": f"{method} is not supported"},
            }
        except Exception as exc:
            log.exception("answering %s from %s failed", method, self.name)
            reply = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": str(exc)}}
        with contextlib.suppress(ServerGone):
            self._send(reply)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the server and everything it started (its own session), then reap it."""
    if proc.poll() is not None:
        return
    killpg = getattr(os, "killpg", None)
    if killpg is not None:
        with contextlib.suppress(OSError):
            killpg(proc.pid, 9)
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(2)
