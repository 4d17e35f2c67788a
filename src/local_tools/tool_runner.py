"""The Python guide's entry point: ``run({"tool": "FileRead", "args": {...}})`` → envelope.

``user_id`` is the host's, beside ``args``: ``{"tool": ..., "args": {...}, "user_id":
"alice"}``. A ``user_id`` inside ``args`` (where the guide once put it) is dropped and
never decides: args are what the model wrote, and a model must not pick whose rules and
"always" answers apply. The workspace is the current directory unless the request
names one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from local_tools.core.errors import ErrorCode
from local_tools.toolbox import Toolbox

__all__ = ["run"]

_toolboxes: dict[str, Toolbox] = {}


def run(request: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(request, Mapping) or not isinstance(request.get("tool"), str):
        return _error(
            ErrorCode.INVALID_INPUT,
            'A request is {"tool": "<name>", "args": {...}}; "tool" is missing.',
        )
    raw = request.get("args") or {}
    if not isinstance(raw, Mapping):
        return _error(ErrorCode.INVALID_INPUT, '"args" must be an object of named arguments.')
    args = dict(raw)
    # Only the host sets the user: a model writing "user_id" into its own arguments
    # must not choose whose permissions apply.
    args.pop("user_id", None)
    user_id = str(request.get("user_id") or "default")
    workspace = str(request.get("workspace") or os.getcwd())
    toolbox = _toolboxes.get(workspace)
    if toolbox is None:
        try:
            toolbox = _toolboxes[workspace] = Toolbox(workspace)
        except Exception as exc:  # a bad config or workspace: still an envelope, never a raise
            return _error(ErrorCode.INVALID_INPUT, f"Cannot open workspace {workspace}: {exc}")
    return toolbox.run(request["tool"], args, user_id=user_id)


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {
        "success": False,
        "error": {"error_code": code.value, "message": message, "details": {}},
    }
