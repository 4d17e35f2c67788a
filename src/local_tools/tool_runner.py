"""The Python guide's entry point: ``run({"tool": "FileRead", "args": {...}})`` → envelope.

``user_id`` may sit inside ``args`` (as the guide shows) or beside them. The
workspace is the current directory unless the request names one.
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
    # The host's user_id (beside args) wins: a model writing "user_id" into its own
    # arguments must not choose whose permissions apply.
    in_args = args.pop("user_id", None)
    user_id = str(request.get("user_id") or in_args or "default")
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
