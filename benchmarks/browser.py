"""The browser tools against bare Playwright doing the same, on loopback, in one run.

1. Cold start to the first snapshot: a new Toolbox's `browser_navigate` + `browser_snapshot`
   (the browser starts lazily on the first call), against bare async Playwright launching
   the same Chromium, opening a page, `goto` and `aria_snapshot(mode="ai")`.
2. Per call after launch: `browser_navigate` + `browser_snapshot` of a small local page
   through `Toolbox.arun` (runner, policy, the route check and the guarding proxy on
   every request, the hand-over to the browser's thread), against bare Playwright's
   `goto` + `aria_snapshot` on a warm page (no proxy, no routing).

Variants run interleaved, round by round; the tables show medians. Target (issue 14):
at most 1.2x bare Playwright per call after launch.

    python benchmarks/browser.py [--rounds 5] [--calls 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_tools import Toolbox
from machine import describe

CHROMIUM = "/usr/bin/chromium"
PAGE = (
    b"<!doctype html><html><head><title>Bench</title></head><body><h1>Sign up</h1>"
    + b"".join(b"<p>Paragraph %d with <a href='/p%d'>a link</a>.</p>" % (i, i) for i in range(40))
    + b"<label>Name <input id=name></label><button>Go</button></body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: Any) -> None:
        pass


def _serve() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/"


def _toolbox(root: Path) -> Toolbox:
    config = {
        "permissions": {"network:outbound": "allow"},
        "network": {"allow_private": ["127.0.0.1"]},
        "browser": {"executable": CHROMIUM},
    }
    return Toolbox(root, config, state_dir=root / ".state", audit=False, plugins=False)


async def _tools_visit(tb: Toolbox, url: str) -> None:
    for name, args in (("browser_navigate", {"url": url}), ("browser_snapshot", {})):
        result = await tb.arun(name, args)
        assert result["success"], result["error"]


async def _bare_visit(page: Any, url: str) -> None:
    await page.goto(url)
    await page.aria_snapshot(mode="ai")


async def cold_tools(root: Path, url: str) -> float:
    started = time.perf_counter()
    tb = _toolbox(root)
    await _tools_visit(tb, url)
    took = time.perf_counter() - started
    tb.close()
    return took


async def cold_bare(url: str) -> float:
    from playwright.async_api import async_playwright

    started = time.perf_counter()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM)
        page = await browser.new_page()
        await _bare_visit(page, url)
        took = time.perf_counter() - started
        await browser.close()
    return took


async def warm(root: Path, url: str, rounds: int, calls: int) -> dict[str, list[float]]:
    from playwright.async_api import async_playwright

    tb = _toolbox(root)
    await _tools_visit(tb, url)  # started
    times: dict[str, list[float]] = {"local-tools": [], "bare Playwright": []}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM)
        page = await browser.new_page()
        await _bare_visit(page, url)
        for _ in range(rounds):
            for name, visit in (
                ("local-tools", lambda: _tools_visit(tb, url)),
                ("bare Playwright", lambda: _bare_visit(page, url)),
            ):
                started = time.perf_counter()
                for _ in range(calls):
                    await visit()
                times[name].append((time.perf_counter() - started) / calls)
        await browser.close()
    tb.close()
    return times


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    server, url = _serve()
    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cold: dict[str, list[float]] = {"local-tools": [], "bare Playwright": []}
        for _ in range(args.rounds):
            cold["local-tools"].append(await cold_tools(root, url))
            cold["bare Playwright"].append(await cold_bare(url))
        per_call = await warm(root, url, args.rounds, args.calls)
    server.shutdown()
    bare_cold = statistics.median(cold["bare Playwright"])
    bare_warm = statistics.median(per_call["bare Playwright"])
    print(f"\ncold start to the first snapshot ({args.rounds} rounds, median)")
    for name, values in cold.items():
        mid = statistics.median(values)
        print(f"  {name:16} {mid * 1000:8.1f} ms  {mid / bare_cold:5.2f}x")
    print(f"\nnavigate + snapshot after launch ({args.rounds} x {args.calls} calls, median)")
    for name, values in per_call.items():
        mid = statistics.median(values)
        print(f"  {name:16} {mid * 1000:8.2f} ms  {mid / bare_warm:5.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
