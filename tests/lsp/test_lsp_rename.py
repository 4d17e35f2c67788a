"""lsp rename on real servers: a diff across files, applied all or nothing.

Each test has its own workspace and toolbox (renames change the files), so each starts
its servers cold: a few seconds apiece.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools.core.context import ToolContext
from local_tools.core.errors import ExecutionError, InvalidInput, ToolError
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.lsp.navigation import Navigator
from local_tools.lsp.rename import apply_text_edits, commit, edits_by_file, rename_plan
from local_tools.lsp.requests import LspRequest
from local_tools.security.jail import Jail

RENAME_PY = {"operation": "rename", "path": "shapes/geometry.py", "symbol": "origin"}
RENAME_TS = {"operation": "rename", "path": "src/geometry.ts", "symbol": "origin"}


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "node_modules" not in p.parts
    }


class Approver:
    """A real asker: records what it is asked, runs `meanwhile` (the user doing something
    while the question is open), then answers."""

    def __init__(self, answer: Answer, meanwhile: Callable[[], None] | None = None) -> None:
        self.answer, self.meanwhile = answer, meanwhile
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.requests.append(request)
        if self.meanwhile is not None:
            self.meanwhile()
        return self.answer


def test_rename_applied_across_python_files(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    tb = make_toolbox()
    out = ok(tb.run("lsp", {**RENAME_PY, "new_name": "zero", "apply": True}))
    assert out["applied"] is True
    assert out["changed"] == ["shapes/geometry.py", "shapes/use.py"]
    assert out["edits"] == 3
    assert "-def origin() -> Point:\n+def zero() -> Point:" in out["diff"]
    assert "+from shapes.geometry import Point, zero" in out["diff"]
    use = (py_project / "shapes/use.py").read_text()
    assert "import Point, zero\n" in use and "distance(zero())" in use and "origin" not in use
    assert "def zero() -> Point:" in (py_project / "shapes/geometry.py").read_text()
    # The server was given the new text: the renamed code type-checks.
    check = ok(tb.run("lsp", {"operation": "diagnostics", "path": "shapes/use.py"}))
    assert check["state"] == "clean"


def test_rename_applied_across_typescript_files(
    make_toolbox: Any, ts_project: Path, ts_server: str
) -> None:
    tb = make_toolbox()
    out = ok(tb.run("lsp", {**RENAME_TS, "new_name": "zero", "apply": True}))
    assert out["changed"] == ["src/geometry.ts", "src/use.ts"]
    use = (ts_project / "src/use.ts").read_text()
    assert 'import { Point, zero } from "./geometry";' in use and "distance(zero())" in use
    assert "export function zero(): Point {" in (ts_project / "src/geometry.ts").read_text()


def test_rename_without_apply_changes_nothing(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    before = snapshot(py_project)
    out = ok(make_toolbox().run("lsp", {**RENAME_PY, "new_name": "zero"}))
    assert out["applied"] is False and len(out["changed"]) == 2
    assert "+def zero() -> Point:" in out["diff"]
    assert snapshot(py_project) == before


def test_a_file_changed_while_the_rename_waits_for_approval_is_a_conflict(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    use = py_project / "shapes/use.py"

    def user_edits() -> None:  # while the (first) approval question is open
        if len(approver.requests) == 1:
            use.write_text(use.read_text() + "\nprint(origin())\n")

    approver = Approver("once", meanwhile=user_edits)
    tb = make_toolbox({"permissions": {"write:file": {"*": "ask"}}}, asker=approver)
    before = snapshot(py_project)
    message = err(tb.run("lsp", {**RENAME_PY, "new_name": "zero", "apply": True}), "CONFLICT")
    assert "shapes/use.py changed on disk" in message and "Nothing was changed" in message
    asked = [(r.permission, r.subject) for r in approver.requests]  # per file
    assert asked == [("write:file", "shapes/geometry.py"), ("write:file", "shapes/use.py")]
    after = snapshot(py_project)
    assert after.pop("shapes/use.py") == before.pop("shapes/use.py") + b"\nprint(origin())\n"
    assert after == before  # geometry.py untouched
    # Run again, it plans on the current text and renames the new use too.
    tb2 = make_toolbox({"permissions": {"write:file": {"*": "allow"}}})
    ok(tb2.run("lsp", {**RENAME_PY, "new_name": "zero", "apply": True}))
    assert use.read_text().endswith("\nprint(zero())\n")


def test_a_file_changed_after_the_server_saw_it_is_renamed_on_its_current_text(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    tb = make_toolbox()
    ok(tb.run("lsp", {"operation": "hover", "path": "shapes/use.py", "symbol": "distance"}))
    use = py_project / "shapes/use.py"
    use.write_text("# a comment that shifts every line\n" + use.read_text())  # not synced
    ok(tb.run("lsp", {**RENAME_PY, "new_name": "zero", "apply": True}))
    text = use.read_text()
    assert text.startswith("# a comment that shifts every line\nfrom shapes.geometry import")
    assert "origin" not in text and "distance(zero())" in text


def test_a_denied_write_rule_refuses_the_rename_and_writes_nothing(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    tb = make_toolbox({"permissions": {"write:file": {"*": "allow", "shapes/use.py": "deny"}}})
    before = snapshot(py_project)
    err(tb.run("lsp", {**RENAME_PY, "new_name": "zero", "apply": True}), "PERMISSION_DENIED")
    assert snapshot(py_project) == before


class FailingJail(Jail):
    """The real jail, except that writing one file fails (a full disk, say)."""

    fail: str = ""

    def write_atomic(self, path: str, data: bytes, **kwargs: Any) -> bool:
        if path.endswith(self.fail):
            raise OSError(28, "No space left on device")
        return super().write_atomic(path, data, **kwargs)


def test_a_failed_write_puts_back_the_files_already_written(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    tb = make_toolbox()
    r = tb.runner
    jail = FailingJail(py_project)
    jail.fail = "use.py"  # written second: geometry.py is written, then put back
    ctx = ToolContext(
        call_id="c1", user_id="default", tool="lsp", jail=jail, config=r.config,
        policy=r.policy, state_dir=r.state_dir, spill_dir=r.spill_dir, resources=r.resources,
    )  # fmt: skip
    before = snapshot(py_project)
    nav = Navigator(ctx)
    plan = rename_plan(nav, LspRequest("rename", "shapes/geometry.py", symbol="origin",
                                       new_name="zero"))  # fmt: skip
    assert [c.shown for c in plan.changes] == ["shapes/geometry.py", "shapes/use.py"]
    with pytest.raises(ToolError, match="put back, so nothing was changed") as failure:
        commit(ctx, plan.changes)
    assert failure.value.code == "IO_ERROR"
    assert snapshot(py_project) == before


# --- edits on text, without a server -------------------------------------------------


def edit(line: int, start: int, end: int, new: str, end_line: int | None = None) -> dict[str, Any]:
    return {
        "range": {
            "start": {"line": line, "character": start},
            "end": {"line": line if end_line is None else end_line, "character": end},
        },
        "newText": new,
    }


def test_edits_count_utf16_and_keep_crlf() -> None:
    text = "a = '😀'; origin()\r\norigin\r\n"
    # '😀' is two UTF-16 units: `origin` starts at unit 10 on the first line.
    out = apply_text_edits(text, [edit(0, 10, 16, "zero"), edit(1, 0, 6, "zero")], "origin")
    assert out == "a = '😀'; zero()\r\nzero\r\n"


def test_edits_that_do_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="overlap"):
        apply_text_edits("abcdef", [edit(0, 0, 3, "x"), edit(0, 2, 4, "y")])
    with pytest.raises(ValueError, match="past the end"):
        apply_text_edits("abc\n", [edit(5, 0, 1, "x")])
    with pytest.raises(ValueError, match="not 'origin'"):  # the file moved under the server
        apply_text_edits("# x\norigin\n", [edit(0, 0, 6, "zero")], "origin")
    # An insertion (an empty range) is fine: `{ x }` becomes `{ y: x }` in some servers.
    assert apply_text_edits("{ x }", [edit(0, 2, 2, "y: ")], "x") == "{ y: x }"


def test_workspace_edits_by_file_and_resource_operations_refused(tmp_path: Path) -> None:
    a, b = (tmp_path / "a.py").as_uri(), (tmp_path / "b.py").as_uri()
    one = edit(0, 0, 1, "y")
    assert edits_by_file({"changes": {a: [one], b: [one, one]}}, "srv") == {
        tmp_path / "a.py": [one],
        tmp_path / "b.py": [one, one],
    }
    versioned = {"documentChanges": [{"textDocument": {"uri": a, "version": 3}, "edits": [one]}]}
    assert edits_by_file(versioned, "srv") == {tmp_path / "a.py": [one]}
    moving = {"documentChanges": [{"kind": "rename", "oldUri": a, "newUri": b}]}
    with pytest.raises(InvalidInput, match="would also rename a file"):
        edits_by_file(moving, "srv")
    with pytest.raises(ExecutionError, match="not a local file"):
        edits_by_file({"changes": {"untitled:1": [one]}}, "srv")
