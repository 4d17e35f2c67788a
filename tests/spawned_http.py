"""`local-tools serve http` in its own process, as a person starts it, for the tests."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRINTED = re.compile(r"(http://127\.0\.0\.1:(\d+))/auth\?token=([0-9a-f]+)")


@dataclass
class Spawned:
    url: str  # http://127.0.0.1:PORT
    auth_url: str  # the URL the server prints, with the token
    token: str
    port: int
    proc: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)


@contextmanager
def spawn_http_server(workspace: Path, state_dir: Path, *extra: str) -> Iterator[Spawned]:
    """The server on a free port, its own token in `state_dir`; stopped with SIGINT
    (Ctrl-C) on exit, which must end it cleanly: exit 0, no traceback."""
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state_dir)}
    env.pop("LOCAL_TOOLS_TOKEN", None)
    env.pop("LOCAL_TOOLS_CONFIG", None)
    args = ["serve", "http", "--workspace", str(workspace), "--port", "0", *extra]
    proc = subprocess.Popen(
        [sys.executable, "-m", "local_tools", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: list[str] = []

    def pump(stream: Any, sink: Callable[[str], None], end: bool) -> None:
        for line in stream:
            sink(line)
        if end:
            lines.put(None)

    pumps = [
        threading.Thread(target=pump, args=(proc.stdout, lines.put, True), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, stderr.append, False), daemon=True),
    ]
    for t in pumps:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "the server exited: " + "".join(stderr)
            found = PRINTED.search(line)
            if found:
                break
        url, port, token = found.group(1), int(found.group(2)), found.group(3)
        yield Spawned(url, found.group(0), token, port, proc, stderr)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("the server did not stop on SIGINT") from None
        finally:
            for t in pumps:
                t.join(timeout=5)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    assert proc.returncode == 0, "".join(stderr)
    assert "Traceback" not in "".join(stderr), "".join(stderr)
