"""A large web_fetch through the sync `Toolbox.run` leaves no task behind at exit.

A page cut at the size limit leaves httpx's body streams (async generators) unfinished;
the loop closes each with a task scheduled as it is collected. Closing the loop under
those tasks printed "Task was destroyed but it is pending!" when the program ended.
Run in a real subprocess: the message is printed as the interpreter and loop go away.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    import net_server
    from local_tools import Toolbox
    from local_tools.tools.web_fetch import MAX_PAGE_BYTES

    server = net_server.serve("127.0.0.1")
    row = b"<p>a paragraph of a large page</p>\\n"
    big = b"<html><body>" + row * (2 * MAX_PAGE_BYTES // len(row)) + b"</body></html>"
    server.routes["/big"] = lambda request: (200, {{"content-type": "text/html"}}, big)
    server.routes["/robots.txt"] = lambda request: (404, {{}}, b"")
    config = {{
        "network": {{"allow_private": ["127.0.0.1"]}},
        "permissions": {{"network:outbound": "allow"}},
    }}
    tb = Toolbox({workspace!r}, config, state_dir={state!r})
    for _ in range(2):
        envelope = tb.run("web_fetch", {{"url": server.url("/big")}})
        assert envelope["success"], envelope
    print("fetched", flush=True)
    if {mode!r} == "close":
        tb.close()
    server.stop()
    """
)


@pytest.mark.parametrize("mode", ["close", "exit without close"])
def test_no_task_is_destroyed_pending_at_exit(tmp_path: Path, mode: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = SCRIPT.format(
        tests=str(TESTS), workspace=str(workspace), state=str(tmp_path / "state"), mode=mode
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fetched"
    assert "Task was destroyed" not in done.stderr
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr, done.stderr
