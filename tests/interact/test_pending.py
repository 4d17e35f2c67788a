"""The pending queue: a call with no person at its door waits for the web console.

The console side runs in a real second process (as `serve http` would), answering
through the same SQLite file; the asking side is a real Toolbox call.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.interact.pending import PendingQueue

# A console in another process: beats, answers the first pending request with DECISION.
CONSOLE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from local_tools.interact.pending import PendingQueue

    queue = PendingQueue(Path(sys.argv[1]))
    deadline = time.monotonic() + 30
    answered = 0
    while time.monotonic() < deadline and answered < int(sys.argv[3]):
        queue.beat("console-test", "http://127.0.0.1:1/")
        for item in queue.pending():
            if queue.answer(item.id, {"decision": sys.argv[2]}, by="console test"):
                answered += 1
                print(item.payload["tool"], item.payload["subject"], flush=True)
        time.sleep(0.02)
    queue.console_gone("console-test")
    """
)


def _queue_of(tb: Toolbox) -> PendingQueue:
    return tb.pending


def _console(tb: Toolbox, decision: str, answers: int = 1) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CONSOLE, str(_queue_of(tb).path), decision, str(answers)],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not _queue_of(tb).console_live():  # wait for its first beat
        assert proc.poll() is None and time.monotonic() < deadline, "the console never beat"
        time.sleep(0.02)
    return proc


@pytest.fixture
def tb(make_toolbox: Any) -> Toolbox:
    return make_toolbox()


def test_without_a_console_an_ask_is_denied_naming_the_rule(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    message = err(tb.run("file_delete", {"path": "a.txt"}), "PERMISSION_DENIED")
    assert '"delete:file"' in message and "a.txt" in message
    assert (workspace / "a.txt").exists()
    assert not _queue_of(tb).path.exists()  # nobody to ask: nothing was queued


def test_the_console_in_another_process_approves_once(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    console = _console(tb, "once")
    ok(tb.run("file_delete", {"path": "a.txt"}))
    out, _ = console.communicate(timeout=30)
    assert not (workspace / "a.txt").exists()
    assert out.split() == ["file_delete", "a.txt"]
    done = _queue_of(tb).recent()[0]
    assert (done.status, done.answered_by) == ("answered", "console test")


def test_the_console_denies(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    console = _console(tb, "deny")
    message = err(tb.run("file_delete", {"path": "a.txt"}), "PERMISSION_DENIED")
    console.communicate(timeout=30)
    assert "declined" in message
    assert (workspace / "a.txt").read_text() == "x"


def test_always_is_remembered_so_the_next_call_does_not_wait(tb: Toolbox, workspace: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text("x")
    console = _console(tb, "always")
    ok(tb.run("file_delete", {"path": "a.txt"}))
    console.communicate(timeout=30)
    # The exact path was approved, nothing broader: b.txt still asks, and with the
    # console gone it is denied.
    ok(tb.run("write_file", {"path": "a.txt", "content": "again"}))
    ok(tb.run("file_delete", {"path": "a.txt"}))
    err(tb.run("file_delete", {"path": "b.txt"}), "PERMISSION_DENIED")


def test_no_answer_in_time_is_a_denial_and_the_request_is_withdrawn(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox()
    tb.runner.asker.timeout = 0.3  # type: ignore[union-attr]
    (workspace / "a.txt").write_text("x")
    queue = _queue_of(tb)
    queue.beat("silent", "http://127.0.0.1:1/")  # a console that never answers
    message = err(tb.run("file_delete", {"path": "a.txt"}), "PERMISSION_DENIED")
    assert "nobody answered" in message
    assert (workspace / "a.txt").exists()
    assert queue.pending() == []
    assert queue.recent()[0].status == "expired"


def test_a_cancelled_call_withdraws_its_request(tmp_path: Path) -> None:
    queue = PendingQueue(tmp_path / "pending.sqlite")

    async def main() -> None:
        request_id = queue.submit("question", {"question": "which?"})
        waiting = asyncio.ensure_future(queue.wait(request_id, 30))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        item = queue.get(request_id)
        assert item is not None and item.status == "cancelled"
        assert not queue.answer(request_id, {"text": "late"}, by="console")  # too late

    asyncio.run(main())


def test_a_request_answered_once_cannot_be_answered_again(tmp_path: Path) -> None:
    queue = PendingQueue(tmp_path / "pending.sqlite")
    request_id = queue.submit("permission", {"tool": "x"})
    assert queue.answer(request_id, {"decision": "deny"}, by="phone")
    assert not queue.answer(request_id, {"decision": "once"}, by="laptop")
    item = queue.get(request_id)
    assert item is not None and (item.answer, item.answered_by) == ({"decision": "deny"}, "phone")


def test_requests_of_a_dead_process_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "pending.sqlite"
    script = (
        "import sys; from pathlib import Path; from local_tools.interact.pending import "
        "PendingQueue; PendingQueue(Path(sys.argv[1])).submit('permission', {'tool': 'x'})"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    queue = PendingQueue(path)
    assert queue.pending() == []  # its asker is gone: nobody would read the answer
    assert queue.recent()[0].status == "cancelled"


def test_a_stale_console_does_not_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = PendingQueue(tmp_path / "pending.sqlite")
    assert not queue.console_live()
    queue.beat("c1", "http://127.0.0.1:1/")
    assert queue.console_live()
    later = time.time() + 60
    monkeypatch.setattr(time, "time", lambda: later)
    assert not queue.console_live()  # it stopped beating a minute ago
    queue.console_gone("c1")
