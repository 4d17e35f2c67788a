"""`local-tools token`: where the servers' bearer token is, and `--rotate` to replace it.

The token lives in `<state dir>/server-token` (0600). `local-tools token` prints where
(not the token: what a command prints, a model may read); `--rotate` writes a new one
and prints it, for the person to configure their clients with. Running servers of that
state dir read the file again at their next request, so the old token stops working at
once (no restart) and every console session opened with it ends: open
`/auth?token=<the new token>` again. With `$LOCAL_TOOLS_TOKEN` set, that value is
the token and nothing here changes it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from local_tools.core.servers import servers
from local_tools.core.state import default_state_dir, tighten_state_dir
from local_tools.security.server_token import (
    TOKEN_VARIABLE,
    rotate_token,
    token_path,
)

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `token` on the CLI's subparsers (its handler is `run`)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "token", help="where the servers' bearer token is; --rotate makes a new one"
    )
    parser.add_argument("--rotate", action="store_true", help="replace the token (printed)")
    parser.set_defaults(handler=run)
    return parser


def run(ns: argparse.Namespace) -> int:
    state_dir = default_state_dir()
    path = token_path(state_dir)
    if os.environ.get(TOKEN_VARIABLE):
        if ns.rotate:
            print(
                f"local-tools: ${TOKEN_VARIABLE} is set and is the token: change or unset it "
                "instead (--rotate changes only the file)",
                file=sys.stderr,
            )
            return 2
        print(f"the token is ${TOKEN_VARIABLE} (it overrides {path})")
        return 0
    tighten_state_dir(state_dir)
    if ns.rotate:
        token = rotate_token(state_dir)
        print(token)
        running = servers(state_dir)
        where = ", ".join(f"{r.kind} on {r.host}:{r.port}" for r in running)
        print(
            f"A new token is in {path}. "
            + (
                f"Running servers ({where}) accept only the new one from their next request; "
                if running
                else ""
            )
            + "Give it to your clients (openlink's popup, MCP clients) and open the console "
            "again with /auth?token=<the new token>.",
            file=sys.stderr,
        )
        return 0
    print(path)
    return 0
