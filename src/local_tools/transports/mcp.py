"""The MCP server: every enabled tool of a Toolbox, over stdio or streamable HTTP.

Thin: tools/list turns `Tool`s into MCP tools, tools/call turns a call into
`Toolbox.arun(...)` and the envelope into a `CallToolResult`. The runner validates,
authorizes, bounds and audits. With its mcp_*.py helpers, the only modules that import
the `mcp` SDK (its import costs about half a second), so `import local_tools` stays
light. tools/list's declarations are built once (`mcp_listing.py`).

`ask` permissions become an elicitation form when the client declared elicitation:
a server-to-client request on legacy protocol versions, an `InputRequiredResult`
round trip on 2026-07-28 (which has no server-to-client requests; the call is re-run
with the answers, see `interact/mcp_elicit.py`). Without it, an ask is denied with
the rule to add, as the runner does with no asker.

Over HTTP: the bearer token is the state dir's (`security/server_token.py`, read again
when `local-tools token --rotate` replaces it); the log shows the token itself only on
the start that made it, afterwards the file that holds it. The port is recorded in the
state dir while the server runs, so no model's web tool or browser connects to it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from local_tools.core.context import ProgressFunc
from local_tools.core.errors import ErrorCode
from local_tools.core.profiles import DEFAULT_PROFILE, UnknownProfile, resolve_profile
from local_tools.core.state import default_state_dir
from local_tools.core.tool import Tool
from local_tools.interact.base import Asker
from local_tools.interact.mcp_asker import McpAsker
from local_tools.interact.mcp_elicit import InputRequired, RoundTripElicit
from local_tools.serving.workspaces import WorkspaceToolboxes
from local_tools.toolbox import Toolbox
from local_tools.transports.mcp_listing import McpDeclarations
from local_tools.transports.mcp_prompts import get_prompt, list_prompts
from local_tools.transports.schemas import BINARY_SUFFIX, to_mcp

__all__ = ["SESSION_HEADER", "LocalToolsMcp", "serve_stdio", "stderr_logging"]

log = logging.getLogger("local_tools.mcp")

USER_ID = "default"
# The SDK forgets a session idle this long; so do we, ending what it left running.
SESSION_IDLE_TIMEOUT = DEFAULT_SESSION_IDLE_TIMEOUT
SESSION_HEADER = "mcp-session-id"


class LocalToolsMcp:
    """The server's state: the workspace (fixed, from roots, or the cwd) and its Toolbox."""

    def __init__(
        self,
        workspace: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | None = None,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        profile: str | None = None,
    ) -> None:
        self._fixed = Path(workspace).resolve() if workspace is not None else None
        self._profile = profile
        self._state_dir = state_dir
        # Per client session (None: stdio, or HTTP on 2026-07-28, which has no sessions).
        self._roots: dict[str | None, Path | None] = {}
        self._last_seen: dict[str, float] = {}
        self._toolboxes = WorkspaceToolboxes(
            config, state_dir, fixed=self._fixed is not None, log=log, profile=profile
        )
        # 2026-07-28 clients hear of a changed tool list on a `subscriptions/listen` stream.
        self.events = InMemorySubscriptionBus()
        self._announced: Path | None = None
        self.elicit = RoundTripElicit()
        self._declarations: dict[Path, McpDeclarations] = {}  # per state dir
        if self._fixed is not None:
            # A broken config is logged at start, not at the first call.
            self._toolboxes.load(self._fixed)

    def server(self) -> Server[Any]:
        from local_tools import __version__

        server: Server[Any] = _Server(
            "local-tools",
            version=__version__,
            title="local-tools",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=ListenHandler(self.events),
        )
        # Registered directly: the constructor's on_roots_list_changed warns (deprecated in
        # 2026-07-28), but legacy clients still send it.
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        return server

    @property
    def state_dir(self) -> Path:
        return Path(self._state_dir) if self._state_dir is not None else default_state_dir()

    def close(self) -> None:
        self._toolboxes.close()

    def end_session(self, session_id: str) -> None:
        """An HTTP session ended (DELETE, or idle past the SDK's timeout): drop its state
        and end the commands it left running. May block briefly: call it off the loop."""
        self._roots.pop(session_id, None)
        self._last_seen.pop(session_id, None)
        for tb in self._toolboxes:
            tb.end_session(USER_ID, session_id)

    def _seen(self, session_id: str | None) -> list[str]:
        """Note a request of `session_id`; the sessions idle past the SDK's timeout."""
        now = time.monotonic()
        if session_id is not None:
            self._last_seen[session_id] = now
        return [s for s, t in self._last_seen.items() if now - t > SESSION_IDLE_TIMEOUT]

    # -- handlers ---------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tb = self._toolboxes.load(await self._workspace(ctx))
        state_dir = tb.state_dir if tb is not None else self.state_dir
        if tb is not None:
            tools = tb.listed(user_id=USER_ID, session_id=_session_id(ctx))
        else:  # a broken config: what the profile would list, each call says what to fix
            try:
                profile = resolve_profile(self._profile or DEFAULT_PROFILE)
            except UnknownProfile:  # one of the broken config's own, or a typo
                profile = resolve_profile(DEFAULT_PROFILE)
            tools = [t for t in _builtin_tools() if t.name != "invalid" and profile.lists(t)]
        declarations = self._declarations.get(state_dir)
        if declarations is None:
            declarations = self._declarations[state_dir] = McpDeclarations(state_dir)
        return types.ListToolsResult(tools=declarations.tools(tools))

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        tb = self._toolboxes.load(await self._workspace(ctx))
        return await list_prompts(tb, USER_ID)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        workspace = await self._workspace(ctx)
        tb = self._toolboxes.load(workspace)
        broken = self._toolboxes.error(workspace) if tb is None else ""
        return await get_prompt(tb, broken, params.name, **self._call(ctx))

    def _call(self, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        return {
            "user_id": USER_ID,
            "transport": "mcp",
            "session_id": _session_id(ctx),
            "asker": self._asker(ctx, None),
        }

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        session_id = _session_id(ctx)
        for idle in self._seen(session_id):
            await anyio.to_thread.run_sync(self.end_session, idle)
        workspace = await self._workspace(ctx)
        tb = self._toolboxes.load(workspace)
        if tb is None:
            # No call could run; the message names the file and the key to fix.
            message = self._toolboxes.error(workspace)
            return _error_result(ErrorCode.EXECUTION_ERROR.value, message)
        args = params.arguments or {}
        state = self.elicit.start(params) if _modern(ctx) else None
        listing = tb.listing_version(user_id=USER_ID, session_id=session_id)
        try:
            envelope = await tb.arun(
                params.name,
                args,
                user_id=USER_ID,
                asker=self._asker(ctx, state),
                transport="mcp",
                on_progress=_progress_sender(ctx),
                session_id=session_id,
            )
        except InputRequired as need:
            return need.result
        if tb.listing_version(user_id=USER_ID, session_id=session_id) != listing:
            await self._tools_changed(ctx)  # find_tools loaded tools: the client re-lists
        return call_result(tb, envelope)

    async def _tools_changed(self, ctx: ServerRequestContext[Any]) -> None:
        try:
            if _modern(ctx):
                await self.events.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
        except Exception as exc:  # a client gone: the tools are loaded all the same
            log.warning("could not tell the client its tool list changed: %s", exc)

    async def _roots_changed(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self._roots.pop(_session_id(ctx), None)  # asked again before the next request

    # -- helpers ----------------------------------------------------------------

    def _asker(self, ctx: ServerRequestContext[Any], state: Any) -> Asker | None:
        caps = ctx.session.client_capabilities
        if caps is None or caps.elicitation is None:
            return None  # no person to ask: the runner denies, naming the rule
        if state is not None:
            return McpAsker(state.elicit)

        async def elicit(
            message: str, schema: dict[str, Any]
        ) -> tuple[str, Mapping[str, Any] | None]:
            result = await ctx.session.elicit_form(message, schema, ctx.request_id)
            return result.action, result.content

        return McpAsker(elicit)

    async def _workspace(self, ctx: ServerRequestContext[Any]) -> Path:
        if self._fixed is not None:
            return self._fixed
        session_id = _session_id(ctx)
        if session_id not in self._roots:
            self._roots[session_id] = await _first_local_root(ctx)
        from_roots = self._roots[session_id]
        chosen = from_roots or Path.cwd().resolve()
        if chosen != self._announced:
            self._announced = chosen
            how = "the client's roots" if from_roots else "the current directory"
            log.warning("workspace: %s (from %s)", chosen, how)
        return chosen


INSTRUCTIONS = (
    "Local file, search and shell tools, jailed to one workspace. More tools (browser, "
    "memory, project data, review, HTTP) are found and loaded with find_tools."
)


class _Server(Server[Any]):
    """Says it sends notifications/tools/list_changed (find_tools loads tools per session)."""

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **rest: Any
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, *args, **rest)


def mcp_tool(tool: Tool) -> types.Tool:
    """A `Tool` as MCP lists it: exactly what `local-tools schema --format mcp` prints."""
    return types.Tool.model_validate(to_mcp(tool))


def call_result(tb: Toolbox, envelope: Mapping[str, Any]) -> types.CallToolResult:
    """The envelope as MCP's result: the model's text, structured output, images apart."""
    if not envelope.get("success"):
        err = envelope.get("error") or {}
        return _error_result(str(err.get("error_code")), str(err.get("message")))
    output = envelope.get("output")
    structured = dict(output) if isinstance(output, Mapping) else {"result": output}
    images: list[types.ContentBlock] = []
    mime = structured.get("mime_type")
    for key in [k for k in structured if k.endswith(BINARY_SUFFIX)]:
        data = structured.pop(key)  # sent once, as image content, not again inside JSON
        if isinstance(data, str) and isinstance(mime, str) and mime.startswith("image/"):
            images.append(types.ImageContent(type="image", data=data, mime_type=mime))
    text = types.TextContent(type="text", text=tb.render(envelope))
    return types.CallToolResult(content=[text, *images], structured_content=structured)


def _error_result(code: str, message: str) -> types.CallToolResult:
    text = f"Error [{code}]: {message}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _session_id(ctx: ServerRequestContext[Any]) -> str | None:
    """The client's HTTP session (legacy streamable HTTP); None on stdio, where the
    process is the session, and on 2026-07-28, which has no sessions."""
    headers = getattr(ctx.request, "headers", None)
    return headers.get(SESSION_HEADER) if headers is not None else None


def _modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _first_local_root(ctx: ServerRequestContext[Any]) -> Path | None:
    """The first of the client's roots that is a local directory, or None.

    Legacy protocol versions only: 2026-07-28 has no server-to-client roots/list.
    """
    caps = ctx.session.client_capabilities
    if _modern(ctx) or caps is None or caps.roots is None:
        return None
    try:
        # The typed request, not session.list_roots(): that one warns that roots are
        # deprecated in 2026-07-28, which is why this runs on legacy versions only.
        result = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult)
    except Exception as exc:  # a client that cannot answer: fall back to the cwd
        log.warning("could not list the client's roots: %s", exc)
        return None
    for root in result.roots:
        url = urlparse(str(root.uri))
        path = Path(unquote(url.path))
        if url.scheme == "file" and path.is_dir():
            return path.resolve()
        log.warning("skipping root %s: not a local directory", root.uri)
    return None


def _builtin_tools() -> list[Tool]:
    from local_tools.tools import builtin_tools

    return list(builtin_tools())


def stderr_logging() -> None:
    # stdout is the protocol on stdio: everything the server says goes to stderr.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


async def serve_stdio(app: LocalToolsMcp) -> None:
    from mcp.server.stdio import stdio_server

    stderr_logging()
    server = app.server()
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        app.close()


def _progress_sender(ctx: ServerRequestContext[Any]) -> ProgressFunc:
    """notifications/progress for this request (clients such as the TypeScript SDK can
    reset their call timeout on each); the SDK drops them when the caller asked none."""
    loop = asyncio.get_running_loop()
    count = 0

    def send(message: str, fraction: float | None) -> None:
        nonlocal count
        count += 1  # progress must increase even when the tool knows no fraction
        progress, total = (fraction * 100, 100.0) if fraction is not None else (count, None)
        report = ctx.session.report_progress(progress, total, message)
        try:  # the tool may report from a worker thread: hand the send to the loop
            loop.call_soon_threadsafe(asyncio.ensure_future, report)
        except RuntimeError:  # the loop is gone with the connection: nobody to tell
            report.close()

    return send
