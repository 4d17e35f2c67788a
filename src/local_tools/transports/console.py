"""The web console served by `serve http` at `/` — for now a placeholder page.

A person opens the URL `serve http` prints (`/auth?token=...`) in a browser; that sets
the `local_tools_console` cookie (HttpOnly, SameSite=Strict) and redirects here.

`console_routes(state)` returns the console's Starlette routes; `http_server.build_app`
mounts them. The guard (`http_guard.py`) lets `/` and `/console/static/...` through
without a token, and accepts the cookie instead of the bearer header for every other
path under `/console/` (the console's own API). What `state` (an
`http_server.ServerState`) offers:

- `state.toolbox` — the `Toolbox` every call runs through (`arun`, `registry`,
  `render`, `pending` — the workspace's queue of permission requests and questions
  waiting for a person, `workspace`, `config`, `audit`);
- `state.token` — the bearer token (also the cookie's value);
- `state.host`, `state.port` — the bound address and port; `state.url` — the base URL
  (`http://127.0.0.1:PORT`), `state.auth_url` — the URL with the token;
- `state.files()` — the workspace's `FileIndex` (for `@` file search).
"""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Route

__all__ = ["console_routes"]

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>local-tools</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 3em auto">
<h1>local-tools console</h1>
<p>Serving the workspace <code>{workspace}</code>.</p>
<p>The console is not built yet. Paste the URL that <code>local-tools serve http</code>
printed into the openlink extension's popup to use the tools from Gemini or AI Studio.</p>
</body></html>
"""


def console_routes(state: Any) -> list[BaseRoute]:
    async def index(request: Request) -> HTMLResponse:
        page = _PAGE.format(workspace=html.escape(str(state.toolbox.workspace)))
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    return [Route("/", index, methods=["GET"])]
