"""The bearer token that local-tools' network servers require (MCP over HTTP, and
`serve http` for the openlink extension and the web console).

One token per state dir, made on first use and kept in `<state>/server-token` (mode
0600, outside every workspace: an agent must not read its own key), so a client
configured once keeps working across restarts. `LOCAL_TOOLS_TOKEN` overrides it.
32 random bytes as 64 hex digits, like openlink's (older files holding a urlsafe token
stay valid: any non-empty token read back is used). Compared in constant time.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from local_tools.core.state import write_state_file

__all__ = ["TOKEN_VARIABLE", "bearer_ok", "server_token", "token_ok"]

TOKEN_VARIABLE = "LOCAL_TOOLS_TOKEN"
_FILE = "server-token"


def server_token(state_dir: Path) -> str:
    override = os.environ.get(TOKEN_VARIABLE)
    if override:
        return override
    path = state_dir / _FILE
    try:
        token = path.read_text(encoding="ascii").strip()
        if token:
            return token
    except (OSError, UnicodeDecodeError):
        pass
    token = secrets.token_hex(32)
    write_state_file(path, token + "\n")
    return token


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
