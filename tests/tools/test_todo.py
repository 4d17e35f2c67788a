"""todo_write / todo_read: whole-list replacement, validation, persistence, two processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.core.file_lock import locked
from local_tools.tools import _todos
from local_tools.tools._todos import read_todos, todos_file
from transports.test_output_schemas import structured


def _todos_of(out: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(t["id"], t["content"], t["status"], t["priority"]) for t in out["todos"]]


def test_write_replaces_the_whole_list_and_read_returns_it(tb: Toolbox) -> None:
    first = ok(
        tb.run(
            "todo_write",
            {
                "todos": [
                    {"id": "a", "content": "Read the spec", "status": "completed"},
                    {
                        "id": "b",
                        "content": "Write tests",
                        "status": "in_progress",
                        "priority": "high",
                    },
                    {"id": "c", "content": "Ship", "priority": "low"},
                ]
            },
        )
    )
    assert first["count"] == 3
    assert first["counts"] == {"pending": 1, "in_progress": 1, "completed": 1, "cancelled": 0}
    assert "note" not in first
    assert _todos_of(first) == [
        ("a", "Read the spec", "completed", "medium"),
        ("b", "Write tests", "in_progress", "high"),
        ("c", "Ship", "pending", "low"),
    ]
    second = ok(
        tb.run("TodoWrite", {"todos": [{"id": "c", "content": "Ship", "status": "cancelled"}]})
    )
    assert _todos_of(second) == [("c", "Ship", "cancelled", "medium")]
    read = ok(tb.run("todoread"))
    assert read["todos"] == second["todos"]
    assert read["counts"]["cancelled"] == 1 and read["updated_at"]
    text = tb.render(tb.run("todo_read"))
    assert text == "1 item: 1 cancelled\n[-] c. Ship"


def test_rendering_marks_each_status(tb: Toolbox) -> None:
    todos = [
        {"content": "one", "status": "completed"},
        {"content": "two", "status": "in_progress", "priority": "high"},
        {"content": "three"},
    ]
    text = tb.render(tb.run("todo_write", {"todos": todos}))
    assert text.splitlines() == [
        "3 items: 1 pending, 1 in progress, 1 completed",
        "[x] 1. one",
        "[~] 2. two (high priority)",
        "[ ] 3. three",
    ]
    assert tb.render(tb.run("todo_write", {"todos": []})) == "The todo list is empty."


def test_nothing_saved_yet_reads_as_an_empty_list(tb: Toolbox) -> None:
    out = ok(tb.run("todo_read"))
    assert out == {
        "count": 0,
        "todos": [],
        "counts": {"pending": 0, "in_progress": 0, "completed": 0, "cancelled": 0},
        "updated_at": None,
    }


def test_plain_strings_json_text_and_status_words(tb: Toolbox) -> None:
    out = ok(tb.run("todo_write", {"todos": ["first", "  second  "]}))
    assert _todos_of(out) == [
        ("1", "first", "pending", "medium"),
        ("2", "second", "pending", "medium"),
    ]
    # As the HTTP server's XML parameters send it: the array as JSON text.
    text = json.dumps(["first", {"content": "third", "status": "In Progress", "priority": "HIGH"}])
    out = ok(tb.run("todo_write", {"todos": text}))
    assert _todos_of(out) == [
        ("1", "first", "pending", "medium"),
        ("3", "third", "in_progress", "high"),
    ]
    out = ok(
        tb.run(
            "todo_write",
            {
                "todos": [
                    {"id": 7, "content": "x", "status": "done"},
                    {"content": "y", "status": "canceled"},
                ]
            },
        )
    )
    assert _todos_of(out) == [("7", "x", "completed", "medium"), ("8", "y", "cancelled", "medium")]


def test_assigned_ids_are_kept_on_resend_and_never_handed_out_twice(tb: Toolbox) -> None:
    ok(tb.run("todo_write", {"todos": ["a", "b", "c"]}))
    # "b" was removed: its number is not reused for the new item.
    out = ok(tb.run("todo_write", {"todos": ["a", "c", "new"]}))
    assert [(t["id"], t["content"]) for t in out["todos"]] == [("1", "a"), ("3", "c"), ("4", "new")]
    # An id given for one item is not given again to another.
    out = ok(tb.run("todo_write", {"todos": [{"id": "4", "content": "c"}, "c", "a"]}))
    assert [(t["id"], t["content"]) for t in out["todos"]] == [("4", "c"), ("3", "c"), ("1", "a")]


def test_active_form_is_kept(tb: Toolbox) -> None:
    item = {"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"}
    out = ok(tb.run("todo_write", {"todos": [item]}))
    assert out["todos"][0]["active_form"] == "Running tests"
    assert ok(tb.run("todo_read"))["todos"][0]["active_form"] == "Running tests"


def test_several_in_progress_is_allowed_but_said(tb: Toolbox) -> None:
    todos = [
        {"id": "1", "content": "a", "status": "in_progress"},
        {"id": "2", "content": "b", "status": "in_progress"},
    ]
    env = tb.run("todo_write", {"todos": todos})
    assert "2 items are in_progress (1, 2)" in ok(env)["note"]
    assert "in_progress (1, 2)" in tb.render(env)


@pytest.mark.parametrize(
    ("todos", "expected"),
    [
        (
            [{"id": "1", "content": "a"}, {"id": "1", "content": "b"}],
            "the id '1' is used by todos[0] and todos[1]",
        ),
        ([{"content": "a", "status": "started"}], "todos.0.status"),
        ([{"content": "a", "priority": "urgent"}], "todos.0.priority"),
        (["   "], "content is empty"),
        ([{"content": "a", "owner": "me"}], "'todos.0.owner' is not a parameter"),
        ("not json", "must be a list of items"),
        ([{"content": "x"}] * 201, "at most 200"),
        ([{"content": "x" * 2001}], "todos.0.content"),
    ],
)
def test_bad_input_is_refused_and_leaves_the_list_alone(
    tb: Toolbox, todos: Any, expected: str
) -> None:
    ok(tb.run("todo_write", {"todos": ["keep me"]}))
    assert expected in err(tb.run("todo_write", {"todos": todos}), "INVALID_INPUT")
    assert _todos_of(ok(tb.run("todo_read"))) == [("1", "keep me", "pending", "medium")]


def test_missing_argument_is_invalid(tb: Toolbox) -> None:
    assert "'todos' is required" in err(tb.run("todo_write", {}), "INVALID_INPUT")


def test_kept_in_the_state_dir_per_user_and_across_restarts(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    tb = make_toolbox()
    ok(tb.run("todo_write", {"todos": ["alice's"]}, user_id="alice"))
    ok(tb.run("todo_write", {"todos": ["bob's"]}, user_id="bob"))
    assert list(workspace.iterdir()) == []  # nothing in the user's tree
    tb.close()
    again = make_toolbox()  # a new process would see the same
    assert _todos_of(ok(again.run("todo_read", user_id="alice"))) == [
        ("1", "alice's", "pending", "medium")
    ]
    assert ok(again.run("todo_read", user_id="carol"))["todos"] == []
    # What the web console reads.
    lists = read_todos(tmp_path / "state", workspace)
    assert {user: [t["content"] for t in items] for user, items in lists.items()} == {
        "alice": ["alice's"],
        "bob": ["bob's"],
    }
    assert todos_file(tmp_path / "state", workspace).parent.parent.name == "workspaces"


def test_needs_no_permission_even_when_everything_is_denied(make_toolbox: Any) -> None:
    deny = {"permissions": {"read:file": "deny", "write:file": "deny", "delete:file": "deny"}}
    tb = make_toolbox(deny)
    ok(tb.run("todo_write", {"todos": ["plan"]}))
    assert ok(tb.run("todo_read"))["count"] == 1
    assert tb.registry.resolve("todo_write").permission is None  # type: ignore[union-attr]


def test_disabled_toolset_hides_the_tools(make_toolbox: Any) -> None:
    tb = make_toolbox({"toolsets": {"enabled": ["files"]}})
    assert "disabled" in err(tb.run("todo_write", {"todos": []}), "UNKNOWN_TOOL")


def test_an_unreadable_file_is_set_aside_not_fatal(tb: Toolbox, tmp_path: Path) -> None:
    path = todos_file(tmp_path / "state", tb.workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert ok(tb.run("todo_read"))["todos"] == []
    ok(tb.run("todo_write", {"todos": ["fresh"]}))
    assert path.with_name("todos.json.corrupt").read_text() == "{not json"
    assert json.loads(path.read_text())["users"]["default"]["todos"][0]["content"] == "fresh"


def test_a_held_lock_times_out_as_io_error(
    tb: Toolbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_todos, "LOCK_WAIT", 0.2)
    lock = todos_file(tmp_path / "state", tb.workspace).with_name("todos.json.lock")
    with locked(lock, what="test"):
        assert "locked by another process" in err(
            tb.run("todo_write", {"todos": ["x"]}), "IO_ERROR"
        )
    ok(tb.run("todo_write", {"todos": ["x"]}))


def test_threads_writing_at_once_lose_nothing(make_toolbox: Any) -> None:
    boxes = [make_toolbox(), make_toolbox()]  # two toolboxes: nothing shared in memory

    def write(n: int) -> None:
        for i in range(20):
            ok(boxes[n].run("todo_write", {"todos": [f"{n}-{i}"]}, user_id=f"user{n}"))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in range(2):
        assert ok(boxes[0].run("todo_read", user_id=f"user{n}"))["todos"][0]["content"] == f"{n}-19"


WRITER = """
import sys
from local_tools import Toolbox

user, rounds = sys.argv[1], int(sys.argv[2])
with Toolbox(sys.argv[3], state_dir=sys.argv[4], audit=False, plugins=False) as tb:
    for i in range(rounds):
        items = [f"{user} {i} {k}" for k in range(5)]
        env = tb.run("todo_write", {"todos": items}, user_id=user)
        assert env["success"], env
        assert tb.run("todo_read", user_id=user)["success"]
"""


def test_two_processes_writing_at_once_never_corrupt_it(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    rounds = 60
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(WRITER),
                user,
                str(rounds),
                str(workspace),
                str(state),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for user in ("alice", "bob")
    ]
    for p in procs:
        _, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
    lists = read_todos(state, workspace)
    # Each process's last write survived the other's read-modify-write.
    for user in ("alice", "bob"):
        assert [t["content"] for t in lists[user]] == [f"{user} {rounds - 1} {k}" for k in range(5)]
    path = todos_file(state, workspace)
    assert not path.with_name("todos.json.corrupt").exists()
    json.loads(path.read_text())


def test_every_output_shape_matches_the_declared_schema(tb: Toolbox) -> None:
    assert structured(tb, "todo_read", {})["updated_at"] is None
    busy = [
        {"content": "a", "status": "in_progress", "activeForm": "A-ing"},
        "b",
        {"content": "c", "status": "in_progress"},
    ]
    assert structured(tb, "todo_write", {"todos": busy})["note"]
    assert structured(tb, "todo_read", {})["count"] == 3
    assert structured(tb, "todo_write", {"todos": []})["count"] == 0
