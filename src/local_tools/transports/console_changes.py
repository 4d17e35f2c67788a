"""The web console's Changes panel: the checkpoints of every session, their diffs, undo.

Routes (a console session only, like `/console/api/answer`: the API token alone may not
undo anything; JSON in and out, every error `{error, code?, details?}`):

    GET  /console/api/checkpoints?limit=N       {checkpoints}: newest first (default 50)
    GET  /console/api/checkpoints/{id}/diff     {checkpoint, diff[, truncated, full_output_path]}
    POST /console/api/checkpoints/{id}/plan     {paths?} -> the restore's dry run
    POST /console/api/checkpoints/{id}/restore  {force?, paths?, undone?} -> the restore

Each is a call of the tool (checkpoint_list, checkpoint_diff, restore, with
all_sessions=true: the person sees and undoes every session's calls) through the
toolbox, so the policy, the audit and the output bounds apply as to any call; the
restore is itself checkpointed, hence undoable here too. The person confirmed the plan
in the page before the restore runs, so its asker (`interact/confirmed.py`) approves
what a rule would ask about the files it writes or deletes (once, never remembered);
a rule that denies still denies. The restore route makes the plan again first (a dry
run: an unknown id is a 404 before anything runs); `undone`, when sent (the page always
sends it), is the ids the confirmed plan undid: if calls were checkpointed since, the
restore would undo more than the person saw, so it is refused (409 PLAN_CHANGED, with
the new plan); so is it when the steps or their conflicts differ from the plan this
server last showed for that checkpoint and paths (the page sends only `undone`; the
plans shown are remembered here, a few at a time). With transport "console" the tools
show every user's checkpoints (a person's door). The console's own calls are audited with
transport "console"; the page leaves the ones that only look out of its call log.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from local_tools.interact.audited import answered_by
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.interact.confirmed import ConfirmedAsker
from local_tools.transports.http_guard import AUTH_SCOPE_KEY, CONSOLE_SESSION

if TYPE_CHECKING:
    from local_tools.toolbox import Toolbox

__all__ = ["changes_routes"]

_log = logging.getLogger(__name__)

USER_ID = "default"  # the user the HTTP server calls as: the same rules apply
TRANSPORT = "console"  # how the audit names the door these calls came through
SESSION_ID = "web-console"  # the restores made here are this session's checkpoints
DEFAULT_LIMIT = 50
MAX_LIMIT = 200  # checkpoint_list's own bound
MAX_BODY = 256 * 1024  # a list of paths; the guard's 10 MB is for tool arguments
MAX_ID = 2**63 - 1  # SQLite's integer
MAX_PLANS_KEPT = 32  # plans shown, remembered to compare with the restore's fresh one

_API_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
# A tool's error code -> the HTTP status that says the same.
_STATUS = {
    "NOT_FOUND": 404,
    "INVALID_INPUT": 400,
    "CONFLICT": 409,
    "PERMISSION_DENIED": 403,
    "UNKNOWN_TOOL": 503,  # the checkpoints toolset is disabled in this workspace
    "TIMEOUT": 504,
    "CANCELLED": 409,
}
_PLAN_KEYS = frozenset({"paths"})
_RESTORE_KEYS = frozenset({"paths", "force", "undone"})


class _ConsoleConfirmed(ConfirmedAsker):
    """The shared confirmed-asker, named in the audit as the console's session and the
    address it came from (the person confirmed in the page, just before)."""

    door = "web console"
    authenticated = CONSOLE_SESSION

    async def ask(self, request: PermissionRequest) -> Answer:
        answer = await super().ask(request)
        if answer == "once":
            answered_by(self.who, CONSOLE_SESSION)
        return answer


# What each tool's call may be approved for: the diff reads the files, the restore
# writes and deletes them; the list asks nothing.
_CONFIRMS: dict[str, tuple[str, ...]] = {
    "checkpoint_list": (),
    "checkpoint_diff": ("read:file",),
    "restore": ("write:file", "delete:file"),
}


class _BadRequest(Exception):
    pass


def changes_routes(tb: Toolbox) -> list[BaseRoute]:
    """The Changes panel's routes for `tb`'s workspace (behind the server's guard)."""
    shown: dict[str, list[dict[str, Any]]] = {}  # (id, paths) -> the steps last shown

    def remember(cid: int, paths: Any, output: dict[str, Any]) -> None:
        key = json.dumps([cid, paths])
        shown.pop(key, None)
        shown[key] = output["plan"]
        while len(shown) > MAX_PLANS_KEPT:
            shown.pop(next(iter(shown)))

    async def call(request: Request, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        client = request.client.host if request.client else "unknown address"
        return await tb.arun(
            tool,
            {**args, "all_sessions": True},
            user_id=USER_ID,
            asker=_ConsoleConfirmed(_CONFIRMS[tool], f"web console ({client})"),
            transport=TRANSPORT,
            session_id=SESSION_ID,
        )

    async def checkpoints(request: Request) -> Response:
        if (refused := _refused(request)) is not None:
            return refused
        raw = request.query_params.get("limit", str(DEFAULT_LIMIT))
        limit = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 6 else 0
        if not 1 <= limit <= MAX_LIMIT:
            return _error(400, f"limit must be a whole number from 1 to {MAX_LIMIT}")
        return _answer(await call(request, "checkpoint_list", {"limit": limit}))

    async def diff(request: Request) -> Response:
        if (refused := _refused(request)) is not None:
            return refused
        try:
            cid = _checkpoint_id(request)
        except _BadRequest as exc:
            return _error(400, str(exc))
        return _answer(await call(request, "checkpoint_diff", {"checkpoint": cid}))

    async def plan(request: Request) -> Response:
        if (refused := _refused(request)) is not None:
            return refused
        try:
            cid = _checkpoint_id(request)
            body = _body(await request.body(), _PLAN_KEYS)
        except _BadRequest as exc:
            return _error(400, str(exc))
        args = {"checkpoint": cid, "paths": body.get("paths"), "dry_run": True}
        envelope = await call(request, "restore", args)
        if envelope["success"]:
            remember(cid, body.get("paths"), envelope["output"])
        return _answer(envelope)

    async def restore(request: Request) -> Response:
        if (refused := _refused(request)) is not None:
            return refused
        try:
            cid = _checkpoint_id(request)
            body = _body(await request.body(), _RESTORE_KEYS)
        except _BadRequest as exc:
            return _error(400, str(exc))
        args = {"checkpoint": cid, "paths": body.get("paths"), "force": body.get("force", False)}
        # The plan again, now (a dry run changes nothing and asks nothing): an unknown
        # id is answered here, before the runner tries to snapshot for it; and a call
        # checkpointed since the person looked would be undone too, unseen.
        envelope = await call(request, "restore", {**args, "dry_run": True})
        if not envelope["success"]:
            return _answer(envelope)
        fresh = envelope["output"]
        seen = body.get("undone")
        steps = shown.get(json.dumps([cid, body.get("paths")]))
        if (seen is not None and sorted(fresh["undone"]) != sorted(seen)) or (
            steps is not None and steps != fresh["plan"]
        ):
            remember(cid, body.get("paths"), fresh)  # the page shows it; confirmed next
            return _error(
                409,
                "the plan changed since you looked (other calls changed files): "
                "nothing was restored; look at the new plan",
                code="PLAN_CHANGED",
                details={"plan": fresh},
            )
        envelope = await call(request, "restore", args)
        if envelope["success"]:
            out = envelope["output"]
            _log.info(
                "console: restored to before checkpoint %s (undid %s, %d failed)",
                out["checkpoint"],
                out["undone"],
                len(out["failed"]),
            )
        return _answer(envelope)

    base = "/console/api/checkpoints"
    return [
        Route(base, checkpoints, methods=["GET"]),
        Route(base + "/{id}/diff", diff, methods=["GET"]),
        Route(base + "/{id}/plan", plan, methods=["POST"]),
        Route(base + "/{id}/restore", restore, methods=["POST"]),
    ]


def _refused(request: Request) -> Response | None:
    # Defence in depth, as for answers: whatever guard this is mounted behind, only a
    # console session (a person in the browser) may look or undo, never the API token.
    if request.scope.get(AUTH_SCOPE_KEY) != CONSOLE_SESSION:
        return _error(403, "only a person in the web console can do this (a console session)")
    return None


def _checkpoint_id(request: Request) -> int:
    raw = str(request.path_params["id"])
    cid = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 20 else 0
    if not 1 <= cid <= MAX_ID:
        raise _BadRequest(f"the checkpoint id must be a positive whole number, not {raw[:40]!r}")
    return cid


def _body(raw: bytes, allowed: frozenset[str]) -> dict[str, Any]:
    """The JSON object sent (an empty body is `{}`), its fields checked."""
    if len(raw) > MAX_BODY:
        raise _BadRequest("the body is too large")
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise _BadRequest("the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise _BadRequest("the body must be a JSON object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _BadRequest(f"unknown field(s) {', '.join(unknown)}; expected {sorted(allowed)}")
    paths = data.get("paths")
    if paths is not None and (
        not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths)
    ):
        raise _BadRequest("paths must be a non-empty list of file or folder paths, or null")
    if "force" in data and not isinstance(data["force"], bool):
        raise _BadRequest("force must be true or false")
    undone = data.get("undone")
    if undone is not None and (
        not isinstance(undone, list)
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in undone)
    ):
        raise _BadRequest("undone must be the list of checkpoint ids the plan showed")
    return data


def _answer(envelope: dict[str, Any]) -> JSONResponse:
    """A tool's envelope as the route's answer: its output, or its error as JSON."""
    if envelope["success"]:
        return JSONResponse(envelope["output"], headers=_API_HEADERS)
    error = envelope["error"]
    code = str(error.get("error_code", "INTERNAL_ERROR"))
    message = str(error.get("message", "the call failed"))
    if code == "UNKNOWN_TOOL":
        message = "the checkpoint tools are disabled in this workspace ([toolsets] config)"
    return _error(_STATUS.get(code, 500), message, code=code, details=error.get("details") or None)


def _error(
    status: int, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if code is not None:
        body["code"] = code
    if details:
        body["details"] = details
    return JSONResponse(body, status_code=status, headers=_API_HEADERS)
