"""`local-tools checkpoints` and `local-tools undo`, run as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import cli
from envelopes import ok
from local_tools import Toolbox


@pytest.fixture
def history(workspace: Path, tmp_path: Path) -> Path:
    """Two calls as `local-tools call` makes them (user default, no session): #1 creates
    notes.txt, #2 edits app.py. Made in-process: a CLI start per call costs seconds."""
    state = tmp_path / "state"
    (workspace / "app.py").write_text("x = 1\n")
    with Toolbox(workspace, state_dir=state) as tb:
        ok(tb.run("write_file", {"path": "notes.txt", "content": "hello"}))
        ok(tb.run("edit", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}))
    return state


def test_calls_made_by_the_cli_are_checkpointed(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    made = cli("call", "write_file", "path=a.txt", "content=hi", cwd=workspace, state=state)
    assert json.loads(made.stdout)["success"], made.stdout
    assert "created  a.txt +1 -0" in cli("checkpoints", cwd=workspace, state=state).stdout


def test_checkpoints_lists_each_call_newest_first(workspace: Path, history: Path) -> None:
    r = cli("checkpoints", cwd=workspace, state=history)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("#2 ") and " edit: 1 file(s) +1 -1" in lines[0]
    assert "modified app.py +1 -1" in lines[1]
    assert lines[2].startswith("#1 ") and "write_file" in lines[2]
    listed = json.loads(cli("checkpoints", "--json", cwd=workspace, state=history).stdout)
    assert [c["id"] for c in listed["output"]["checkpoints"]] == [2, 1]


def test_checkpoints_diff_shows_one_call(workspace: Path, history: Path) -> None:
    r = cli("checkpoints", "--diff", "2", cwd=workspace, state=history)
    assert r.returncode == 0, r.stderr
    assert "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2" in r.stdout
    missing = cli("checkpoints", "--diff", "9", cwd=workspace, state=history)
    assert missing.returncode == 1 and "no checkpoint 9" in missing.stdout


def test_undo_without_a_terminal_shows_the_plan_and_changes_nothing(
    workspace: Path, history: Path
) -> None:
    r = cli("undo", cwd=workspace, state=history)
    assert r.returncode == 2
    assert "replace   app.py" in r.stdout and "pass --yes" in r.stdout
    assert (workspace / "app.py").read_text() == "x = 2\n"


def test_undo_yes_restores_and_is_itself_undoable(workspace: Path, history: Path) -> None:
    r = cli("undo", "--yes", cwd=workspace, state=history)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (workspace / "app.py").read_text() == "x = 1\n"
    assert (workspace / "notes.txt").read_text() == "hello"  # only the newest call undone
    again = cli("undo", "--yes", cwd=workspace, state=history)  # undo the undo
    assert again.returncode == 0, again.stdout
    assert (workspace / "app.py").read_text() == "x = 2\n"


def test_undo_n_takes_back_the_last_n_calls(workspace: Path, history: Path) -> None:
    r = cli("undo", "2", "--yes", cwd=workspace, state=history)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "undoing #1, #2" in r.stdout
    assert (workspace / "app.py").read_text() == "x = 1\n"
    assert not (workspace / "notes.txt").exists()
    too_many = cli("undo", "9", "--yes", cwd=workspace, state=history)
    assert too_many.returncode == 1 and "nothing restored" in too_many.stdout


def test_undo_refuses_a_conflict_unless_forced(workspace: Path, history: Path) -> None:
    (workspace / "app.py").write_text("x = 3  # the person's own edit\n")
    r = cli("undo", "--yes", cwd=workspace, state=history)
    assert r.returncode == 1 and "CONFLICT" in r.stdout
    assert (workspace / "app.py").read_text() == "x = 3  # the person's own edit\n"
    forced = cli("undo", "--yes", "--force", cwd=workspace, state=history)
    assert forced.returncode == 0, forced.stdout
    assert (workspace / "app.py").read_text() == "x = 1\n"


def test_undo_to_an_id_for_one_path(workspace: Path, history: Path) -> None:
    r = cli("undo", "--to", "1", "--path", "notes.txt", "--yes", cwd=workspace, state=history)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (workspace / "notes.txt").exists()
    assert (workspace / "app.py").read_text() == "x = 2\n"  # left out by --path


def test_checkpoints_gc_reports_and_keeps_what_is_needed(workspace: Path, history: Path) -> None:
    r = cli("checkpoints", "--gc", cwd=workspace, state=history)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("dropped 0 checkpoint(s); store ")
    assert cli("undo", "--yes", cwd=workspace, state=history).returncode == 0
    assert (workspace / "app.py").read_text() == "x = 1\n"


def test_doctor_names_checkpoints(workspace: Path, tmp_path: Path) -> None:
    r = cli("doctor", cwd=workspace, state=tmp_path / "state")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("checkpoints"))
    assert "on (git; commands: inotify" in line or "on (git; commands: git's stat cache" in line
