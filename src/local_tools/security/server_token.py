"""The bearer token that local-tools' network servers require (MCP over HTTP, and
`serve http` for the openlink extension and the web console).

One token per state dir, made on first use and kept in `<state>/server-token` (mode
0600, outside every workspace: an agent must not read its own key), so a client
configured once keeps working across restarts. `LOCAL_TOOLS_TOKEN` overrides it.
32 random bytes as 64 hex digits, like openlink's (older files holding a urlsafe token
stay valid: any non-empty token read back is used). Compared in constant time.

`rotate_token` (`local-tools token --rotate`) writes a new one; a running server reads
the file again when it changes (`TokenSource`), so the old token stops working at its
next request, no restart needed.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
from pathlib import Path

from local_tools.core.state import write_state_file

__all__ = [
    "TOKEN_VARIABLE",
    "TokenSource",
    "bearer_ok",
    "ensure_token",
    "rotate_token",
    "server_token",
    "token_ok",
    "token_path",
]

TOKEN_VARIABLE = "LOCAL_TOOLS_TOKEN"
_FILE = "server-token"


def token_path(state_dir: Path) -> Path:
    return Path(state_dir) / _FILE


def server_token(state_dir: Path) -> str:
    return ensure_token(state_dir)[0]


def ensure_token(state_dir: Path) -> tuple[str, bool]:
    """The token, and whether it was made just now (the first start of a server)."""
    override = os.environ.get(TOKEN_VARIABLE)
    if override:
        return override, False
    found = _read(token_path(state_dir))
    if found:
        return found, False
    return rotate_token(state_dir), True


def rotate_token(state_dir: Path) -> str:
    """A new token in the state dir's file (the old one stops working)."""
    token = secrets.token_hex(32)
    write_state_file(token_path(state_dir), token + "\n")
    return token


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


class TokenSource:
    """The token a running server accepts now: the file is read again when it changes
    (one stat per request), so a rotation takes effect without a restart. A file gone
    or unreadable keeps the last token (removing it is not rotating it)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = token_path(state_dir)
        self._lock = threading.Lock()
        self._token, _ = ensure_token(state_dir)
        self._seen = self._signature()

    def current(self) -> str:
        override = os.environ.get(TOKEN_VARIABLE)
        if override:
            return override
        signature = self._signature()
        if signature is not None and signature != self._seen:
            with self._lock:
                found = _read(self.path)
                if found:
                    self._token, self._seen = found, signature
        return self._token

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size


def bearer_ok(header: str | None, token: str) -> bool:
    """Whether an Authorization header value carries `token` (constant time)."""
    if not header or header[:7].lower() != "bearer ":
        return False
    return token_ok(header[7:].strip(), token)


def token_ok(given: str | None, token: str) -> bool:
    """Whether `given` is `token` (constant time)."""
    if given is None:
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass")
    )
