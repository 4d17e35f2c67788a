"""`local-tools serve http` against a plain Starlette endpoint, and `/files` on 100k files.

Two servers, each its own process, both Starlette served by uvicorn with the same
settings (`http_server.serve`'s):

- `local-tools serve http --port 0` on a workspace holding one small file;
- a plain Starlette app (this file, `--plain-server`) whose `POST /exec` reads the
  request body and answers the exact bytes local-tools answers for the same call: no
  guard, no token, no coercion, no runner, no tool. The floor for any server built
  this way.

The client is this process: HTTP/1.1 keep-alive connections written by hand on asyncio
streams (a few µs a request, so the client does not hide the servers' cost). Measured,
interleaved round by round: `POST /exec` of `read_file` (the body the openlink
extension sends, arguments as strings) with 1 and with 20 concurrent clients —
requests per second, p50 and p99 latency. Then `GET /files?q=` on a generated tree of
100,000 files (kept in /tmp between runs): the first query right after the server
starts (cold: it waits for the listing), then p50/p99 of several queries.

    python benchmarks/http_exec.py [--rounds 5] [--requests 2000] [--files-tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Run as a script, this folder is sys.path[0], and this file's name would shadow the
# standard library's `http` for what is imported later (uvicorn, Starlette): take it off.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def describe() -> str:
    spec = importlib.util.spec_from_file_location("machine", HERE / "machine.py")
    assert spec is not None and spec.loader is not None
    machine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(machine)
    return str(machine.describe())


THROUGHPUT_TARGET = 0.5  # ours / plain, at least
FILES_P99_TARGET = 50.0  # ms
TREE_FILES = 100_000
QUERIES = ["read", "src/util", "test_", "mdl12", "zz9q", "/comp"]
EXTENSION = "chrome-extension://bhnnabgkidkkjgkakmkpnkakfpkcmpnj"


# -- the plain server (its own process) -------------------------------------------------


def plain_server(answer_file: str) -> None:
    """Starlette + uvicorn, one route answering fixed bytes; prints its URL."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from local_tools.serving.startup import bind_socket

    answer = Path(answer_file).read_bytes()

    async def exec_(request: Request) -> Response:
        await request.body()
        return Response(answer, media_type="application/json")

    app = Starlette(routes=[Route("/exec", exec_, methods=["POST"])])
    sock = bind_socket("127.0.0.1", 0)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_keep_alive=5,
        limit_concurrency=200,
    )
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/ ready", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


# -- starting servers ----------------------------------------------------------------


@contextmanager
def spawn(args: list[str], env: dict[str, str]) -> Iterator[tuple[str, str | None, float]]:
    """Start a server; yields (base URL, token or None, seconds until it printed its URL)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            found = re.search(r"(http://127\.0\.0\.1:\d+)/(?:auth\?token=([0-9a-f]+))?", line)
            if found:
                yield found.group(1), found.group(2), time.perf_counter() - started
                break
        else:
            raise RuntimeError(f"{args} exited without printing its URL")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def ours(workspace: Path, state: Path) -> list[str]:
    del state
    return [
        sys.executable,
        "-m",
        "local_tools",
        "serve",
        "http",
        "-w",
        str(workspace),
        "--port",
        "0",
    ]


def server_env(state: Path) -> dict[str, str]:
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
    env.pop("LOCAL_TOOLS_TOKEN", None)
    env.pop("LOCAL_TOOLS_CONFIG", None)
    return env


# -- the client --------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection; `request` returns (status, body)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        host, port = url.removeprefix("http://").split(":")
        return cls(*await asyncio.open_connection(host, int(port)))

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


def build_request(
    method: str, path: str, url: str, headers: dict[str, str], body: bytes = b""
) -> bytes:
    host = url.removeprefix("http://")
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def load(url: str, raw: bytes, total: int, clients: int, check: bytes) -> dict[str, float]:
    """`total` requests from `clients` connections at once; rate and latency."""
    conns = [await Connection.open(url) for _ in range(clients)]
    latencies: list[float] = []
    errors = 0

    async def run(conn: Connection, count: int) -> None:
        nonlocal errors
        for _ in range(count):
            t0 = time.perf_counter()
            status, body = await conn.request(raw)
            latencies.append(time.perf_counter() - t0)
            if status != 200 or body != check:
                errors += 1

    try:
        await asyncio.gather(*(run(c, 5) for c in conns))  # warm the connections
        latencies.clear()
        started = time.perf_counter()
        await asyncio.gather(*(run(c, total // clients) for c in conns))
        elapsed = time.perf_counter() - started
    finally:
        for c in conns:
            c.close()
    if errors:
        raise RuntimeError(f"{errors} bad answers from {url}")
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50": latencies[len(latencies) // 2] * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


# -- /exec ---------------------------------------------------------------------------------


def bench_exec(rounds: int, requests: int, tmp: Path) -> list[str]:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text(
        "".join(f"line {i}: some text of a small file\n" for i in range(30))
    )
    state = tmp / "state"
    call = {"name": "read_file", "args": {"path": "small.txt", "limit": "20"}, "callId": "k3x9q"}
    body = json.dumps(call).encode()
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    with spawn(ours(ws, state), server_env(state)) as (our_url, token, _):
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Origin": EXTENSION,
        }
        raw_ours = build_request("POST", "/exec", our_url, headers, body)

        async def first() -> bytes:
            conn = await Connection.open(our_url)
            try:
                status, answer = await conn.request(raw_ours)
            finally:
                conn.close()
            assert status == 200 and json.loads(answer)["status"] == "success", answer
            return answer

        answer = asyncio.run(first())
        (tmp / "answer.json").write_bytes(answer)
        plain_args = [sys.executable, __file__, "--plain-server", str(tmp / "answer.json")]
        with spawn(plain_args, server_env(state)) as (plain_url, _, _):
            plain_headers = {"Content-Type": "application/json", "Origin": EXTENSION}
            raw_plain = build_request("POST", "/exec", plain_url, plain_headers, body)
            variants = [("plain", plain_url, raw_plain), ("local-tools", our_url, raw_ours)]
            for r in range(rounds):
                order = variants if r % 2 == 0 else variants[::-1]
                for clients in (1, 20):
                    for name, url, raw in order:
                        figures = asyncio.run(load(url, raw, requests, clients, answer))
                        results.setdefault((name, clients), []).append(figures)
    out = [
        f"`POST /exec` read_file (20 lines, {len(answer)}-byte answer), {rounds} rounds × "
        f"{requests} requests, interleaved; medians of the rounds",
        "",
        "| clients | server | requests/s | p50 ms | p99 ms | ours / plain | target |",
        "|--:|---|--:|--:|--:|--:|--:|",
    ]
    for clients in (1, 20):
        med = {
            name: {
                k: statistics.median(f[k] for f in results[(name, clients)])
                for k in ("rps", "p50", "p99")
            }
            for name in ("plain", "local-tools")
        }
        ratio = med["local-tools"]["rps"] / med["plain"]["rps"]
        met = "met" if ratio >= THROUGHPUT_TARGET else "MISSED"
        for name in ("plain", "local-tools"):
            m = med[name]
            extra = (
                f"{ratio:.2f}× | ≥ {THROUGHPUT_TARGET}× {met}" if name == "local-tools" else " | "
            )
            figures = f"{m['rps']:.0f} | {m['p50']:.2f} | {m['p99']:.2f}"
            out.append(f"| {clients} | {name} | {figures} | {extra} |")
    out += ["", *in_process(ws, state, body)]
    return out


def in_process(ws: Path, state: Path, body: bytes, calls: int = 3000) -> list[str]:
    """Where a local-tools request's time goes, without sockets: the runner alone
    (`Toolbox.arun`), and the whole guarded app called as ASGI (guard, routing, coercion,
    the call, rendering, JSON)."""
    from local_tools import Toolbox
    from local_tools.transports.http_server import ServerState, build_app

    tb = Toolbox(ws, state_dir=state / "in-process")
    app = build_app(ServerState(tb, lambda: "t" * 64, "127.0.0.1", 1))
    scope = {
        "type": "http", "method": "POST", "path": "/exec", "raw_path": b"/exec",
        "query_string": b"", "root_path": "", "scheme": "http", "http_version": "1.1",
        "server": ("127.0.0.1", 1), "client": ("127.0.0.1", 2), "asgi": {"version": "3.0"},
        "headers": [
            (b"host", b"127.0.0.1:1"), (b"authorization", b"Bearer " + b"t" * 64),
            (b"content-type", b"application/json"), (b"origin", EXTENSION.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }  # fmt: skip
    args = json.loads(body)["args"]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        pass

    async def whole() -> None:
        await app(dict(scope), receive, send)

    async def runner() -> None:
        await tb.arun("read_file", {"path": args["path"], "limit": 20}, transport="http")

    async def timed(f: Any) -> float:
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls // 5):
                await f()
            samples.append((time.perf_counter() - t0) / (calls // 5) * 1e6)
        return statistics.median(samples)

    async def measure() -> tuple[float, float]:
        await timed(runner)  # warm
        return await timed(runner), await timed(whole)

    try:
        arun_us, app_us = asyncio.run(measure())
    finally:
        tb.close()
    return [
        f"per call in process, no sockets, median µs: Toolbox.arun('read_file') {arun_us:.0f}; "
        f"the whole guarded app (guard, route, coercion, the call, rendering, JSON) {app_us:.0f}",
    ]


# -- /files ----------------------------------------------------------------------------------


def make_tree(root: Path, count: int) -> None:
    """`count` empty files in a source-like tree (kept: made once per machine)."""
    marker = root / ".complete"
    if marker.exists() and marker.read_text() == str(count):
        return
    rng = random.Random(7)
    words = "src lib core util api model view test docs comp reader writer parser server".split()
    words += ["client", "config", "handler", "store"]
    exts = [".py", ".ts", ".tsx", ".md", ".json", ".go", ".rs", ".txt"]
    made = 0
    d = 0
    while made < count:
        depth = rng.randint(1, 4)
        folder = root.joinpath(*(f"{rng.choice(words)}{rng.randint(0, 40)}" for _ in range(depth)))
        folder = folder.with_name(f"{folder.name}_{d}")
        folder.mkdir(parents=True, exist_ok=True)
        d += 1
        for _ in range(min(100, count - made)):
            name = f"{rng.choice(words)}_{rng.choice(words)}{rng.randint(0, 999)}{rng.choice(exts)}"
            (folder / name).touch()
            made += 1
    marker.write_text(str(count))


def bench_files(tree: Path, tmp: Path, repeats: int) -> list[str]:
    make_tree(tree, TREE_FILES)
    state = tmp / "files-state"
    rows: list[str] = []
    with spawn(ours(tree, state), server_env(state)) as (url, token, _):
        headers = {"Authorization": f"Bearer {token}", "Origin": EXTENSION}

        async def run() -> tuple[float, int, dict[str, list[float]], dict[str, int]]:
            conn = await Connection.open(url)
            try:
                t0 = time.perf_counter()
                status, body = await conn.request(
                    build_request("GET", "/files?q=read", url, headers)
                )
                cold = (time.perf_counter() - t0) * 1000
                assert status == 200, body
                cold_hits = len(json.loads(body)["files"])
                times: dict[str, list[float]] = {q: [] for q in QUERIES}
                hits: dict[str, int] = {}
                for _ in range(repeats):
                    for q in QUERIES:
                        raw = build_request("GET", f"/files?q={q}", url, headers)
                        t0 = time.perf_counter()
                        status, body = await conn.request(raw)
                        times[q].append((time.perf_counter() - t0) * 1000)
                        hits[q] = len(json.loads(body)["files"])
                return cold, cold_hits, times, hits
            finally:
                conn.close()

        cold, cold_hits, times, hits = asyncio.run(run())
    rows += [
        f"`GET /files?q=` on {TREE_FILES:,} files ({tree}), {repeats} requests per query, "
        "one client",
        "",
        "| query | files returned | p50 ms | p99 ms | target p99 |",
        "|---|--:|--:|--:|--:|",
        f"| `read`, first request after start (cold) | {cold_hits} | {cold:.1f} |  |  |",
    ]
    for q in QUERIES:
        ts = sorted(times[q])
        p50, p99 = ts[len(ts) // 2], ts[min(len(ts) - 1, int(len(ts) * 0.99))]
        met = "met" if p99 < FILES_P99_TARGET else "MISSED"
        rows.append(f"| `{q}` | {hits[q]} | {p50:.2f} | {p99:.2f} | < {FILES_P99_TARGET:g} {met} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--files-repeats", type=int, default=200)
    parser.add_argument(
        "--files-tree", type=Path, default=Path(tempfile.gettempdir()) / "local-tools-bench-100k"
    )
    parser.add_argument("--plain-server", metavar="ANSWER_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_server:
        plain_server(args.plain_server)
        return
    with tempfile.TemporaryDirectory(prefix="lt-http-bench-") as tmp:
        lines = [f"serve http — {describe()}", ""]
        lines += bench_exec(args.rounds, args.requests, Path(tmp))
        lines += [""]
        lines += bench_files(args.files_tree, Path(tmp), args.files_repeats)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
