"""A local server's start-up, the same for `serve http` and `serve mcp --transport http`.

In order: the state dir made private (0700, files 0600), the token read or made
(`security/server_token.py`), the socket bound but not listening, then the port
recorded in the state dir (`core/servers.py`) and only then listening: no connection
gets in before the web tools know to refuse it. `stop` closes the socket and removes
the record.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from local_tools.core.servers import ServerRecord, register_server, unregister_server
from local_tools.core.state import tighten_state_dir
from local_tools.security.server_token import (
    TOKEN_VARIABLE,
    TokenSource,
    ensure_token,
    token_path,
)

__all__ = [
    "BACKLOG",
    "ServerStart",
    "bind_socket",
    "held_stop_signals",
    "log_to_stderr",
    "start_server",
    "token_hint",
]

BACKLOG = 2048  # the extension may fetch only http://127.0.0.1:*/*


def bind_socket(host: str, port: int, *, listen: bool = True) -> socket.socket:
    """A TCP socket bound to `host`:`port` (0: any free port), listening unless told
    not to yet (`sock.listen(BACKLOG)` then), for uvicorn."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP spelled out: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose
    # proto says TCP, and accepted sockets copy it; with 0, every answer written in two
    # parts (headers, body) waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@dataclass
class ServerStart:
    """A server's socket and token, bound but not yet listening (see `listen`)."""

    state_dir: Path
    kind: str  # "http" or "mcp", as `core/servers.py` records it
    host: str
    sock: socket.socket
    tokens: TokenSource  # read at each request: a rotation applies
    token: str  # the token at start
    made_now: bool  # the token was made by this start
    on_failure: Callable[[], None]
    record: ServerRecord | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def listen(self) -> None:
        """Record the port in the state dir, then listen. Call it before the URL is
        printed: from then on no tool of this state dir connects to the port."""
        try:
            self.record = register_server(self.state_dir, self.kind, self.host, self.port)
            self.sock.listen(BACKLOG)
        except BaseException:
            self.sock.close()
            self.on_failure()
            raise

    def stop(self) -> None:
        """Close the socket and remove the record (the server stopped)."""
        self.sock.close()
        if self.record is not None:
            unregister_server(self.record)


def start_server(
    state_dir: Path, kind: str, host: str, port: int, *, on_failure: Callable[[], None]
) -> ServerStart:
    """The state dir tightened, the token ready, the socket bound (not listening).
    `on_failure` (closing what the server holds) runs when a step fails, here or in
    `ServerStart.listen`; the error is raised again."""
    try:
        tighten_state_dir(state_dir)
        token, made_now = ensure_token(state_dir)
        tokens = TokenSource(state_dir)
        sock = bind_socket(host, port, listen=False)  # listening once recorded
    except BaseException:
        on_failure()
        raise
    return ServerStart(state_dir, kind, host, sock, tokens, token, made_now, on_failure)


def token_hint(state_dir: Path, token: str, made_now: bool) -> str:
    """What the log says about the token: the token itself only when it was made just
    now (the person configures the client once); after that, where it is."""
    if os.environ.get(TOKEN_VARIABLE):
        return f"send Authorization: Bearer <the token in ${TOKEN_VARIABLE}>"
    if made_now:
        return (
            f"send Authorization: Bearer {token} (a new token, saved in "
            f"{token_path(state_dir)}; later starts show only the file)"
        )
    return (
        f"send Authorization: Bearer <the token in {token_path(state_dir)}> "
        "(`local-tools token --rotate` replaces it)"
    )


@contextmanager
def held_stop_signals() -> Iterator[list[int]]:
    """Ctrl-C or SIGTERM between the URL's printing and the server's own handlers is
    recorded (the list yielded), not raised: a KeyboardInterrupt inside `asyncio.run`'s
    loop construction prints a traceback from a half-built loop. The server replays
    what was recorded once its handlers are in place."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    stops = (signal.SIGINT, signal.SIGTERM)
    before = {sig: signal.signal(sig, lambda sig, _frame: held.append(sig)) for sig in stops}
    try:
        yield held
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def log_to_stderr() -> None:
    """The server's warnings and errors on stderr (stdout carries the URL)."""
    logger = logging.getLogger("local_tools")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
