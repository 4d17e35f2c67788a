"""Language errors after a change, through a real Toolbox and real language servers.

basedpyright and typescript-language-server check small two-module projects; one
toolbox (so one server) per language serves the tests of a module. `wait` is generous
for the checks of correctness (a warm server answers in well under a second); the
tests of `pending` use a short one and a server that never publishes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox
from local_tools.interact.base import Answer, PermissionRequest, ReviewAnswer, ReviewRequest
from lsp_projects import PY_PROJECT, TS_PROJECT, write_tree

MUTE_SERVER = Path(__file__).parent / "mute_server.py"
WAIT = 10.0  # an upper bound only: a warm server answers in well under a second


def _toolbox(root: Path, files: dict[str, str], config: dict[str, Any] | None = None) -> Toolbox:
    ws = root / "ws"
    ws.mkdir()
    write_tree(ws, files)
    settings = {"lsp": {"wait": WAIT}, **(config or {})}
    return Toolbox(ws, settings, state_dir=root / "state", audit=False, plugins=False)


def _diagnostics(tb: Toolbox, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    env = tb.run(tool, args)
    assert env["success"], env.get("error")
    report = env["output"].get("diagnostics")
    assert report is not None, env["output"]
    return dict(report)


def _file(report: dict[str, Any], path: str) -> dict[str, Any]:
    found = [f for f in report["files"] if f["path"] == path]
    assert found, report
    return dict(found[0])


def _warm(tb: Toolbox, path: str, text: str) -> None:
    """Write `path` until its server has started and answered (a cold start may be
    pending); bounded."""
    give_up = time.monotonic() + 90
    report: dict[str, Any] = {}
    while time.monotonic() < give_up:
        env = tb.run("write_file", {"path": path, "content": text, "overwrite": True})
        assert env["success"], env.get("error")
        report = env["output"]["diagnostics"]
        if report["state"] != "pending":
            return
        time.sleep(0.5)
    pytest.fail(f"the server never answered: {report}")


# --------------------------------------------------------------------------- Python


@pytest.fixture(scope="module")
def py_tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    tb = _toolbox(tmp_path_factory.mktemp("py"), PY_PROJECT)
    yield tb
    tb.close()


@pytest.fixture
def warm_py(py_tb: Toolbox, pyright_server: str) -> Toolbox:
    _warm(py_tb, "shapes/scratch.py", "x: int = 1\n")
    return py_tb


def test_an_added_type_error_is_new_and_the_fix_is_clean(warm_py: Toolbox) -> None:
    tb = warm_py
    broken = {"path": "shapes/use.py", "old_string": "total: float", "new_string": "total: str"}
    env = tb.run("edit", broken)
    assert env["success"], env.get("error")
    report = env["output"]["diagnostics"]
    assert report["state"] == "errors"
    use = _file(report, "shapes/use.py")
    assert use["state"] == "errors" and use["server"] == "basedpyright"
    assert len(use["new"]) == 1 and use.get("existing", 0) == 0
    assert use["new"][0].startswith("shapes/use.py:8:14: error: ")
    assert '"str"' in use["new"][0]
    text = tb.render(env)
    assert "Language errors (basedpyright): 1 new" in text
    assert "  shapes/use.py:8:14: error: " in text

    fixed = {"path": "shapes/use.py", "old_string": "total: str", "new_string": "total: float"}
    env = tb.run("edit", fixed)
    report = env["output"]["diagnostics"]
    assert report == {
        "state": "clean",
        "files": [{"path": "shapes/use.py", "state": "clean", "server": "basedpyright"}],
    }
    assert tb.render(env).endswith("\nNo language errors (basedpyright)")


def test_an_error_already_there_is_not_new(warm_py: Toolbox) -> None:
    tb = warm_py
    env = tb.run("write_file", {"path": "shapes/old.py", "content": 'a: int = "x"\n\nb = 1\n'})
    assert _file(env["output"]["diagnostics"], "shapes/old.py")["new"]  # new when created
    # An edit elsewhere in the file: the old error is still there, and not new.
    report = _diagnostics(
        tb, "edit", {"path": "shapes/old.py", "old_string": "b = 1", "new_string": "\nb = 2"}
    )
    old = _file(report, "shapes/old.py")
    assert old["state"] == "errors" and report["state"] == "errors"
    assert old["new"] == [] and old["existing"] == 1
    # The same through multi_edit, where the text before is the file before all edits.
    report = _diagnostics(
        tb,
        "multi_edit",
        {"path": "shapes/old.py", "edits": [
            {"old_string": "b = 2", "new_string": "b = 3"},
            {"old_string": "b = 3", "new_string": "b: str = 3"},
        ]},
    )  # fmt: skip
    old = _file(report, "shapes/old.py")
    assert old["existing"] == 1 and len(old["new"]) == 1
    assert old["new"][0].startswith("shapes/old.py:4:")


def test_a_change_that_breaks_another_open_file_names_it(warm_py: Toolbox) -> None:
    tb = warm_py
    # use.py is opened by a change of its own (an edit the server sees).
    _diagnostics(tb, "edit", {"path": "shapes/use.py", "old_string": "\n\n\ndef", "new_string":
                              "\n\n\n# distances\ndef"})  # fmt: skip
    rename = {"path": "shapes/geometry.py", "old_string": "def norm", "new_string": "def length"}
    env = tb.run("edit", rename)
    report = env["output"]["diagnostics"]
    assert _file(report, "shapes/geometry.py")["state"] == "clean"
    assert report["state"] == "errors"  # the change broke a caller
    [other] = report["other_files"]
    assert other["path"] == "shapes/use.py"
    assert other["new"][0].startswith("shapes/use.py:6:14: error: ")
    assert '"norm"' in other["new"][0]
    assert "Other open files this change affected:\n  shapes/use.py:6:14" in tb.render(env)

    back = {"path": "shapes/geometry.py", "old_string": "def length", "new_string": "def norm"}
    report = _diagnostics(tb, "edit", back)
    assert report["state"] == "clean"
    assert report["other_files"] == [{"path": "shapes/use.py", "new": [], "fixed": 1}]


def test_apply_patch_reports_every_file_it_changed(warm_py: Toolbox) -> None:
    patch = """*** Begin Patch
*** Add File: shapes/extra.py
+n: int = "one"
*** Update File: shapes/scratch.py
@@
-x: int = 1
+x: int = None
*** End Patch"""
    report = _diagnostics(warm_py, "apply_patch", {"patch": patch})
    assert report["state"] == "errors"
    extra = _file(report, "shapes/extra.py")
    scratch = _file(report, "shapes/scratch.py")
    assert extra["new"][0].startswith("shapes/extra.py:1:10: error: ")
    assert scratch["new"][0].startswith("shapes/scratch.py:1:10: error: ")


class _EditingReviewer:
    """A person who answers a review by replacing the text with `content`."""

    def __init__(self, content: str) -> None:
        self.content = content

    async def ask(self, request: PermissionRequest) -> Answer:
        raise AssertionError(f"nothing should ask for permission: {request}")

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        return ReviewAnswer("edit", content=self.content)


def test_a_reviewers_edit_is_checked_too(warm_py: Toolbox) -> None:
    tb = warm_py
    edited = "from shapes.geometry import origin\n\nlength: str = origin().norm()\n"
    env = tb.run("write_file", {"path": "shapes/reviewed.py", "content": "v = 1\n"})
    assert env["output"]["diagnostics"]["state"] == "clean"
    env = tb.run(
        "review_and_edit_file", {"path": "shapes/reviewed.py"}, asker=_EditingReviewer(edited)
    )
    assert env["success"], env.get("error")
    entry = _file(env["output"]["diagnostics"], "shapes/reviewed.py")
    assert entry["new"][0].startswith("shapes/reviewed.py:3:15: error: ")
    assert "Language errors (basedpyright): 1 new" in tb.render(env)


def test_diagnostics_false_and_other_languages_add_nothing(warm_py: Toolbox) -> None:
    tb = warm_py
    env = tb.run(
        "write_file",
        {"path": "shapes/quiet.py", "content": 'q: int = "no"\n', "diagnostics": False},
    )
    assert env["success"] and "diagnostics" not in env["output"]
    assert "language" not in tb.render(env).lower()
    env = tb.run("write_file", {"path": "notes.md", "content": "# notes\n"})
    assert env["success"] and "diagnostics" not in env["output"]
    env = tb.run("edit", {"path": "notes.md", "old_string": "notes", "new_string": "n"})
    assert env["success"] and "diagnostics" not in env["output"]


def test_lsp_disabled_adds_nothing(tmp_path: Path) -> None:
    tb = _toolbox(tmp_path, PY_PROJECT, {"lsp": {"enabled": False}})
    try:
        env = tb.run("write_file", {"path": "bad.py", "content": 'a: int = "x"\n'})
        assert env["success"] and "diagnostics" not in env["output"]
        assert tb.runner.resources.peek("lsp") is None  # no server was even considered
    finally:
        tb.close()


def test_no_server_installed_is_unavailable_naming_what_to_install(tmp_path: Path) -> None:
    config = {"lsp": {"basedpyright": {"command": "/nonexistent"}, "pyright": {"enabled": False}}}
    tb = _toolbox(tmp_path, PY_PROJECT, config)
    try:
        env = tb.run("write_file", {"path": "bad.py", "content": 'a: int = "x"\n'})
        report = env["output"]["diagnostics"]
        assert report["state"] == "unavailable"
        entry = _file(report, "bad.py")
        assert entry["state"] == "unavailable"
        assert "pip install basedpyright" in entry["note"]
        assert "Language errors not checked: no Python language server" in tb.render(env)
    finally:
        tb.close()


def test_a_server_that_never_publishes_is_pending_within_the_wait(tmp_path: Path) -> None:
    wait = 1.0
    mute = {"command": sys.executable, "args": [str(MUTE_SERVER)], "extensions": [".fake"]}
    tb = _toolbox(tmp_path, {}, {"lsp": {"wait": wait, "mute": mute}})
    try:
        notes = []
        for n in range(3):  # starting, then started and silent
            started = time.monotonic()
            env = tb.run("write_file", {"path": f"f{n}.fake", "content": "ERROR\n"})
            took = time.monotonic() - started
            assert took < wait + 5, took  # did not hang past the wait
            report = env["output"]["diagnostics"]
            assert report["state"] == "pending"
            entry = _file(report, f"f{n}.fake")
            assert entry["state"] == "pending" and entry["server"] == "mute"
            assert "not checked yet" in tb.render(env)
            assert "No language errors" not in tb.render(env)
            notes.append(entry["note"])
        assert notes[-1] == "No diagnostics from mute within 1 s"
    finally:
        tb.close()


def test_a_cold_start_is_never_clean_when_there_is_an_error(
    tmp_path: Path, pyright_server: str
) -> None:
    tb = _toolbox(tmp_path, PY_PROJECT, {"lsp": {"wait": 2.0}})
    try:
        started = time.monotonic()
        report = _diagnostics(
            tb, "edit", {"path": "shapes/use.py", "old_string": "total: float",
                         "new_string": "total: str"},
        )  # fmt: skip
        assert time.monotonic() - started < 2.0 + 5
        entry = _file(report, "shapes/use.py")
        assert entry["state"] in ("errors", "pending"), report
        if entry["state"] == "errors":
            assert entry["new"][0].startswith("shapes/use.py:8:14: error: ")
        else:
            assert "still starting" in entry["note"] or "within 2 s" in entry["note"]
    finally:
        tb.close()


# --------------------------------------------------------------------------- TypeScript


@pytest.fixture(scope="module")
def ts_tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    tb = _toolbox(tmp_path_factory.mktemp("ts"), TS_PROJECT)
    yield tb
    tb.close()


@pytest.fixture
def warm_ts(ts_tb: Toolbox, ts_server: str) -> Toolbox:
    _warm(ts_tb, "src/scratch.ts", "export const x: number = 1;\n")
    return ts_tb


def test_typescript_new_errors_old_errors_fixes_and_callers(warm_ts: Toolbox) -> None:
    tb = warm_ts
    report = _diagnostics(
        tb, "edit", {"path": "src/use.ts", "old_string": "total: number",
                     "new_string": "total: string"},
    )  # fmt: skip
    use = _file(report, "src/use.ts")
    assert use["state"] == "errors" and use["server"] == "typescript"
    assert use["new"] == [
        "src/use.ts:7:14: error: Type 'number' is not assignable to type 'string'. [2322]"
    ]
    # Elsewhere in the same file: the error is still there, not new.
    report = _diagnostics(
        tb, "edit", {"path": "src/use.ts", "old_string": "return p.norm();",
                     "new_string": "return p.norm() + 0;"},
    )  # fmt: skip
    use = _file(report, "src/use.ts")
    assert use["new"] == [] and use["existing"] == 1
    # The fix is clean: a server that publishes nothing when a file stays clean is asked.
    report = _diagnostics(
        tb, "edit", {"path": "src/use.ts", "old_string": "total: string",
                     "new_string": "total: number"},
    )  # fmt: skip
    assert report == {
        "state": "clean",
        "files": [{"path": "src/use.ts", "state": "clean", "server": "typescript"}],
    }
    # Renaming a method breaks the open caller.
    env = tb.run(
        "edit", {"path": "src/geometry.ts", "old_string": "norm(): number",
                 "new_string": "length(): number"},
    )  # fmt: skip
    report = env["output"]["diagnostics"]
    assert report["state"] == "errors"
    assert _file(report, "src/geometry.ts")["state"] == "clean"
    [other] = report["other_files"]
    assert other["new"] == [
        "src/use.ts:4:12: error: Property 'norm' does not exist on type 'Point'. [2339]"
    ]
    report = _diagnostics(
        tb, "edit", {"path": "src/geometry.ts", "old_string": "length(): number",
                     "new_string": "norm(): number"},
    )  # fmt: skip
    assert report["state"] == "clean"
    assert report["other_files"] == [{"path": "src/use.ts", "new": [], "fixed": 1}]
