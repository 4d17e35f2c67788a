"""Soak: `serve http` and `serve mcp` (stdio) as real processes under mixed calls.

Not for CI (ten minutes by default). Both servers run side by side on one temporary
workspace (200 small files) with a config given by `--config` that allows writes and
the command `true`; each has its own client thread calling, round after round:
read_file, grep, glob, list_dir, write_file, edit, exec_cmd `true` and the tool list
(HTTP: `POST /v1/tools/{name}` and `GET /tools` on one keep-alive connection; MCP:
newline-delimited JSON-RPC on the server's stdin/stdout, `tools/call` and
`tools/list`). Every answer is checked (a failed call is counted, and the run fails).

Printed for each server: RSS, open files and threads (psutil) after a warm-up round
(imports and caches loaded), every minute, and at the end; calls per second overall.
Flat figures from the first sample to the last are the point: a leak shows as a
steady climb.

    python benchmarks/soak.py [--minutes 10]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
# Run as a script, this folder is sys.path[0]: keep its modules from shadowing others.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

CONFIG = """\
[permissions]
"write:file" = "allow"
"execute:command" = { "true" = "allow" }
"""
FILES = 200
TARGETS = 50  # files write_file and edit cycle through


def describe() -> str:
    spec = importlib.util.spec_from_file_location("machine", HERE / "machine.py")
    assert spec is not None and spec.loader is not None
    machine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(machine)
    return str(machine.describe())


# -- the mixed calls -------------------------------------------------------------------


def mixed_calls(own: str) -> itertools.cycle[tuple[str, dict[str, Any]]]:
    """Each kind of call once a round, files chosen round by round ("": list the tools);
    a server writes and edits in its `own` folder only."""
    rounds: list[tuple[str, dict[str, Any]]] = []
    for n in range(TARGETS):
        target = f"soak/{own}/t{n}.txt"
        rounds += [
            ("read_file", {"path": f"src/m{n * 3 % FILES}.py", "limit": 20}),
            ("grep", {"pattern": f"def f{n}\\b", "path": "src"}),
            ("glob", {"pattern": f"src/m{n % 10}*.py"}),
            ("list_dir", {"path": "src"}),
            ("write_file", {"path": target, "content": f"value = {n}\n", "overwrite": True}),
            ("edit", {"path": target, "old_string": f"= {n}", "new_string": f"= {n + 1}"}),
            ("exec_cmd", {"command": "true"}),
            ("", {}),  # the tool list
        ]
    return itertools.cycle(rounds)


def make_workspace(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    for own in ("http", "mcp"):
        (root / "soak" / own).mkdir(parents=True)
    for i in range(FILES):
        body = "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(i, i + 30))
        (root / "src" / f"m{i}.py").write_text(body)


# -- servers and their clients ---------------------------------------------------------


@dataclass
class Sample:
    at: float
    calls: int
    rss_mb: float
    open_files: int
    fds: int
    threads: int


@dataclass
class Server:
    name: str
    own: str  # its folder under soak/
    proc: subprocess.Popen[Any]
    call: Callable[[str, dict[str, Any]], None]
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)

    def sample(self, started: float) -> None:
        p = psutil.Process(self.proc.pid)
        with p.oneshot():
            self.samples.append(
                Sample(
                    at=time.monotonic() - started,
                    calls=self.calls,
                    rss_mb=p.memory_info().rss / 2**20,
                    open_files=len(p.open_files()),
                    fds=p.num_fds(),
                    threads=p.num_threads(),
                )
            )


def start_http(ws: Path, config: Path, env: dict[str, str]) -> Server:
    argv = [sys.executable, "-m", "local_tools", "serve", "http", "-w", str(ws)]
    proc = subprocess.Popen(
        [*argv, "-c", str(config), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"http://(127\.0\.0\.1):(\d+)/auth\?token=([0-9a-f]+)", line)
        if found:
            host, port, token = found.group(1), int(found.group(2)), found.group(3)
            break
    else:
        raise RuntimeError("serve http exited without printing its URL")
    conn = http.client.HTTPConnection(host, port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(tool: str, args: dict[str, Any]) -> None:
        if tool:
            conn.request("POST", f"/v1/tools/{tool}", json.dumps(args), headers)
        else:
            conn.request("GET", "/tools", headers=headers)
        response = conn.getresponse()
        body = json.loads(response.read())
        if response.status != 200 or (tool and not body.get("success")):
            raise RuntimeError(f"{tool or 'GET /tools'}: {response.status} {body}")

    return Server("serve http", "http", proc, call)


def start_mcp(ws: Path, config: Path, env: dict[str, str]) -> Server:
    argv = [sys.executable, "-m", "local_tools", "serve", "mcp", "-w", str(ws)]
    proc = subprocess.Popen(
        [*argv, "-c", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    ids = itertools.count(1)

    def rpc(method: str, params: dict[str, Any] | None = None) -> Any:
        number = next(ids)
        message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params or {}}
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()
        while True:  # skip notifications (list_changed, logging) until our answer
            line = stdout.readline()
            if not line:
                raise RuntimeError(f"serve mcp ended during {method}")
            answer = json.loads(line)
            if answer.get("id") == number:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    rpc(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"},
        },
    )
    stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    stdin.flush()

    def call(tool: str, args: dict[str, Any]) -> None:
        if not tool:
            rpc("tools/list")
            return
        result = rpc("tools/call", {"name": tool, "arguments": args})
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result.get('content')}")

    return Server("serve mcp (stdio)", "mcp", proc, call)


def drive(server: Server, until: float, stop: threading.Event) -> None:
    for tool, args in mixed_calls(server.own):
        if stop.is_set() or time.monotonic() >= until:
            return
        try:
            server.call(tool, args)
        except Exception as exc:  # counted and reported; the soak goes on
            server.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            if len(server.errors) > 20:
                stop.set()
                return
        server.calls += 1


def stop_server(server: Server) -> None:
    if server.proc.stdin is not None:
        server.proc.stdin.close()  # stdio: end of input ends the server
    server.proc.terminate()
    try:
        server.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()


# -- the run ---------------------------------------------------------------------------


def soak(minutes: float) -> tuple[list[Server], float]:
    tmp = Path(tempfile.mkdtemp(prefix="local-tools-soak-"))
    ws = tmp / "ws"
    make_workspace(ws)
    config = tmp / "soak.toml"
    config.write_text(CONFIG)
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(tmp / "state")}
    for key in ("LOCAL_TOOLS_TOKEN", "LOCAL_TOOLS_CONFIG"):
        env.pop(key, None)
    servers = [start_http(ws, config, env), start_mcp(ws, config, env)]
    try:
        for server in servers:  # two rounds each: imports and caches loaded
            for tool, args in itertools.islice(mixed_calls(server.own), 8 * 2):
                server.call(tool, args)
        started = time.monotonic()
        until = started + minutes * 60
        for server in servers:
            server.sample(started)
        stop = threading.Event()
        threads = [
            threading.Thread(target=drive, args=(s, until, stop), daemon=True) for s in servers
        ]
        for t in threads:
            t.start()
        next_sample = started + 60
        while any(t.is_alive() for t in threads):
            time.sleep(min(1.0, max(0.0, next_sample - time.monotonic())))
            if time.monotonic() >= next_sample and time.monotonic() < until:
                for server in servers:
                    server.sample(started)
                next_sample += 60
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        for server in servers:
            server.sample(started)
    finally:
        for server in servers:
            stop_server(server)
    return servers, elapsed


def report(servers: list[Server], elapsed: float, minutes: float) -> list[str]:
    lines = [
        f"soak: serve http and serve mcp (stdio) side by side — {describe()}",
        "",
        f"{minutes:g} min of mixed calls, one client thread per server (read_file, grep, "
        "glob, list_dir, write_file, edit, exec_cmd `true`, the tool list)",
        "",
        "| server | calls | calls/s | failed | sample | at s | RSS MB | open files | fds | "
        "threads |",
        "|---|--:|--:|--:|---|--:|--:|--:|--:|--:|",
    ]
    for s in servers:
        rate = s.calls / elapsed if elapsed else 0.0
        for i, m in enumerate(s.samples):
            what = "start" if i == 0 else "end" if i == len(s.samples) - 1 else f"min {i}"
            head = (
                f"| {s.name} | {s.calls} | {rate:.0f} | {len(s.errors)} |"
                if i == 0
                else ("| | | | |")
            )
            lines.append(
                f"{head} {what} | {m.at:.0f} | {m.rss_mb:.1f} | {m.open_files} | {m.fds} | "
                f"{m.threads} |"
            )
    for s in servers:
        first, last = s.samples[0], s.samples[-1]
        lines.append(
            f"\n{s.name}: RSS {first.rss_mb:.1f} -> {last.rss_mb:.1f} MB "
            f"({last.rss_mb - first.rss_mb:+.1f}), fds {first.fds} -> {last.fds}, "
            f"threads {first.threads} -> {last.threads}"
        )
        for error in s.errors[:5]:
            lines.append(f"  failed: {error}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long (default 10)")
    opts = parser.parse_args()
    servers, elapsed = soak(opts.minutes)
    print("\n".join(report(servers, elapsed, opts.minutes)))
    if any(s.errors for s in servers):
        sys.exit(1)


if __name__ == "__main__":
    main()
