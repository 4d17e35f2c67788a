"""Memory of `serve http`: idle, and after 10,000 `POST /exec` calls, against bare Starlette.

    .venv/bin/python benchmarks/serve_http_rss.py [--calls 10000] [--clients 4]

Two servers, each its own process, both Starlette served by uvicorn with the same
settings (`http_server.serve`'s):

- `local-tools serve http --port 0` on a workspace holding a small file (audit on, as
  users run it);
- a bare Starlette app (this file, `--bare-server`) whose `POST /exec` parses the JSON
  body, reads the lines the call names from the same file and answers them as JSON: the
  same reads with no guard, token, coercion, runner, audit or tool. It imports only
  Starlette and uvicorn: the floor for any server built this way.

RSS (VmRSS, /proc/PID/status) of each server process: once it printed its URL, after
1 s idle, after the first call, then after every 2,000 `read_file` calls (the body the
openlink extension sends, arguments as strings) up to `--calls`, the two servers taking
turns, 2,000 calls at a time, from `--clients` keep-alive connections; the peak
(VmHWM) at the end. The client is this process (hand-written HTTP/1.1 on asyncio
streams, from http_exec.py).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STEP = 2000


def _load(name: str) -> Any:
    """A sibling benchmark module by path (http_exec.py must not shadow `http`)."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the bare server (its own process) -----------------------------------------------------


def bare_server(root: str) -> None:
    """Starlette + uvicorn; `POST /exec` reads the named lines of a file under root."""
    import socket

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    base = os.path.realpath(root)

    async def exec_(request: Request) -> JSONResponse:
        call = json.loads(await request.body())
        args = call["args"]
        path = os.path.realpath(os.path.join(base, args["path"]))
        if not path.startswith(base + os.sep):
            return JSONResponse({"status": "error", "error": "outside"}, status_code=403)
        limit = int(args.get("limit", 2000))
        with open(path, encoding="utf-8") as f:
            lines = [f"{n}\t{line}" for n, line in zip(range(1, limit + 1), f, strict=False)]
        return JSONResponse(
            {"status": "success", "callId": call.get("callId"), "output": "".join(lines)}
        )

    app = Starlette(routes=[Route("/exec", exec_, methods=["POST"])])
    # IPPROTO_TCP spelled out, as serving/startup.py does: asyncio turns Nagle off only
    # on such sockets; otherwise every answer waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
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


# -- measuring -------------------------------------------------------------------------------


def _status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM in MB."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def _child_pid(marker: str) -> int:
    """The pid of this process's child whose command line holds `marker`."""
    me = str(os.getpid())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == me and marker.encode() in argv:
            return int(pid)
    raise RuntimeError(f"no child process runs {marker}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--bare-server", metavar="ROOT", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.bare_server:
        bare_server(opts.bare_server)
        return
    machine = _load("machine")
    http = _load("http_exec")
    with tempfile.TemporaryDirectory(prefix="lt-rss-") as tmp_name:
        tmp = Path(tmp_name)
        ws, state = tmp / "ws", tmp / "state"
        ws.mkdir()
        (ws / "small.txt").write_text(
            "".join(f"line {i}: some text of a small file\n" for i in range(30))
        )
        call = {"name": "read_file", "args": {"path": "small.txt", "limit": "20"}}
        body = json.dumps({**call, "callId": "k3x9q"}).encode()
        env = http.server_env(state)
        rows: dict[str, list[tuple[str, dict[str, float]]]] = {"local-tools": [], "bare": []}
        rates: dict[str, list[float]] = {"local-tools": [], "bare": []}
        bare_args = [sys.executable, __file__, "--bare-server", str(ws)]
        with (
            http.spawn(http.ours(ws, state), env) as (our_url, token, our_start),
            http.spawn(bare_args, env) as (bare_url, _, bare_start),
        ):
            servers = {
                "local-tools": (our_url, {"Authorization": f"Bearer {token}"}, our_start),
                "bare": (bare_url, {}, bare_start),
            }
            raws, pids = {}, {}
            markers = {"local-tools": "serve", "bare": "--bare-server"}
            for name, (url, auth, _) in servers.items():
                pids[name] = _child_pid(markers[name])
                headers = {**auth, "Content-Type": "application/json", "Origin": http.EXTENSION}
                raws[name] = http.build_request("POST", "/exec", url, headers, body)
                rows[name].append(("started (URL printed)", _status(pids[name])))
            time.sleep(1.0)
            for name in servers:
                rows[name].append(("idle, 1 s later", _status(pids[name])))

            async def one(name: str) -> bytes:
                conn = await http.Connection.open(servers[name][0])
                try:
                    status, answer = await conn.request(raws[name])
                finally:
                    conn.close()
                assert status == 200 and json.loads(answer)["status"] == "success", answer
                return answer

            answers = {name: asyncio.run(one(name)) for name in servers}
            for name in servers:
                rows[name].append(("after the first call", _status(pids[name])))
            done = 0
            while done < opts.calls:
                step = min(STEP, opts.calls - done)
                for name in servers:
                    url = servers[name][0]
                    got = asyncio.run(http.load(url, raws[name], step, opts.clients, answers[name]))
                    rates[name].append(got["rps"])
                done += step
                for name in servers:
                    rows[name].append((f"after {done:,} calls", _status(pids[name])))
    print(f"serve http memory — {machine.describe()}")
    print(
        f"`POST /exec` read_file (20 lines of a 30-line file), {opts.clients} keep-alive "
        f"clients, {STEP:,} calls at a time per server, taking turns; RSS in MB\n"
    )
    print("| point | local-tools | bare Starlette | ours − bare |")
    print("|---|--:|--:|--:|")
    for (label, ours), (_, bare) in zip(rows["local-tools"], rows["bare"], strict=True):
        print(
            f"| {label} | {ours['VmRSS']:.1f} | {bare['VmRSS']:.1f} "
            f"| {ours['VmRSS'] - bare['VmRSS']:+.1f} |"
        )
    ours_end, bare_end = rows["local-tools"][-1][1], rows["bare"][-1][1]
    print(
        f"| peak (VmHWM) | {ours_end['VmHWM']:.1f} | {bare_end['VmHWM']:.1f} "
        f"| {ours_end['VmHWM'] - bare_end['VmHWM']:+.1f} |"
    )
    ours_growth = ours_end["VmRSS"] - rows["local-tools"][2][1]["VmRSS"]
    bare_growth = bare_end["VmRSS"] - rows["bare"][2][1]["VmRSS"]
    print(
        f"| growth, first call → last | {ours_growth:+.1f} | {bare_growth:+.1f} "
        f"| {ours_growth - bare_growth:+.1f} |"
    )
    print(
        f"\nstart (spawn until the URL is printed): local-tools {our_start * 1000:.0f} ms, "
        f"bare {bare_start * 1000:.0f} ms; requests/s, median of the steps: "
        f"local-tools {sorted(rates['local-tools'])[len(rates['local-tools']) // 2]:.0f}, "
        f"bare {sorted(rates['bare'])[len(rates['bare']) // 2]:.0f}"
    )


if __name__ == "__main__":
    main()
