"""The audit log of calls made over MCP, approval rounds included.

On protocol 2026-07-28 a call that needs the person's approval ends its first round
with InputRequired (a BaseException raised out of the runner); the client asks its
person and re-sends the call. Both rounds are in the log: the aborted one as
CANCELLED with a note naming InputRequired, the re-sent one with its real outcome.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from local_tools.core.audit import AuditLog, AuditRecord
from local_tools.transports.mcp import LocalToolsMcp

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


def _answer(choice: str | None) -> Callable[..., Any]:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if choice is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": choice})

    return callback


def _delete(workspace: Path, path: str, choice: str | None, **client: Any) -> types.CallToolResult:
    got: list[types.CallToolResult] = []

    async def main() -> None:
        app = LocalToolsMcp(workspace)
        try:
            async with Client(app.server(), elicitation_callback=_answer(choice), **client) as c:
                got.append(await c.call_tool("file_delete", {"path": path}))
        finally:
            app.close()  # closes the toolbox: every record is written

    anyio.run(main)
    return got[0]


def _log(tmp_path: Path) -> list[AuditRecord]:
    # The state dir the tests' autouse fixture gives the server ($LOCAL_TOOLS_STATE_DIR).
    with AuditLog(tmp_path / "state" / "audit.sqlite", flush_interval=0) as log:
        return list(reversed(log.query(tool="file_delete")))  # oldest first


def test_the_aborted_round_is_audited_then_the_re_sent_call(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "once.txt").write_text("x")
    result = _delete(workspace, "once.txt", "once")
    assert not result.is_error
    assert not (workspace / "once.txt").exists()
    aborted, done = _log(tmp_path)
    assert aborted.outcome == "error" and aborted.error_code == "CANCELLED"
    assert aborted.note is not None and aborted.note.startswith("InputRequired")
    assert aborted.transport == "mcp" and aborted.args == {"path": "once.txt"}
    assert done.outcome == "success" and done.error_code is None and done.note is None
    assert aborted.call_id != done.call_id  # two rounds, two calls


def test_a_declined_approval_leaves_both_rounds(workspace: Path, tmp_path: Path) -> None:
    (workspace / "keep.txt").write_text("x")
    result = _delete(workspace, "keep.txt", None)
    assert result.is_error
    assert (workspace / "keep.txt").exists()
    aborted, refused = _log(tmp_path)
    assert aborted.error_code == "CANCELLED" and aborted.note is not None
    assert refused.error_code == "PERMISSION_DENIED" and refused.note is None


def test_legacy_elicitation_is_one_call_one_record(workspace: Path, tmp_path: Path) -> None:
    # Before 2026-07-28 the server asks inside the call: no round ends early.
    (workspace / "once.txt").write_text("x")
    assert not _delete(workspace, "once.txt", "once", mode="legacy").is_error
    (only,) = _log(tmp_path)
    assert only.outcome == "success" and only.note is None
