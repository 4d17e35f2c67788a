"""The web tools against a bare httpx client doing the same, on loopback, in one run.

1. A 1 MB HTML page fetched and converted to Markdown: `web_fetch` through the whole
   runner, against bare httpx + the same conversion, against bare httpx alone.
2. Small JSON round trips: `http_request` through the runner; the guarded client
   (security/net.py `request`, a new client per call, as the tools use it); bare httpx
   with a new client per request (the same shape without the guard, one SSL context
   shared as the guarded client shares its own); bare httpx
   reusing one client (keep-alive, the floor).

The guard's cost is guarded client minus bare httpx with a new client: resolving and
checking the address, the redirect loop, the byte cap. Variants run interleaved, round
by round; the tables show medians.

    python benchmarks/web.py [--rounds 7] [--calls 300] [--pages 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import httpx

from local_tools import Toolbox
from local_tools.security import net
from local_tools.web.convert import convert_html, decode_text
from machine import describe

_SECTION = (
    "<h2>Section {i}</h2><p>Some <b>bold</b> text, <i>italics</i> and a "
    "<a href='/page/{i}'>link</a> in a paragraph of ordinary words about the topic.</p>"
    "<ul><li>first point</li><li>second point</li></ul><pre><code>x = {i}\n</code></pre>"
    "<table><tr><th>a</th><th>b</th></tr><tr><td>{i}</td><td>{i}</td></tr></table>"
)


def page(size: int) -> bytes:
    head = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Bench</title>"
        "<style>p{margin:0}</style><script>var x = 1;</script></head><body>"
        "<nav><a href='/'>Home</a></nav><main>"
    )
    parts, n, i = [head], len(head), 0
    while n < size:
        part = _SECTION.format(i=i)
        parts.append(part)
        n += len(part)
        i += 1
    parts.append("</main><footer>footer</footer></body></html>")
    return "".join(parts).encode()


def serve(html: bytes) -> tuple[ThreadingHTTPServer, str]:
    small = json.dumps({"ok": True, "items": list(range(10))}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # Headers and body leave in two writes: without this, Nagle plus the client's
            # delayed ACK adds ~40 ms to every keep-alive response.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:
            body, ctype = (
                (html, "text/html") if self.path == "/page" else (small, "application/json")
            )
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


async def _stub_resolver(host: str, port: int) -> list[str]:
    # Names resolve to the server; IP literals (the benchmark's URLs) never reach this.
    return ["127.0.0.1"]


async def timed(func: Callable[[], Awaitable[Any]], n: int) -> float:
    """Median seconds per call over n calls."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def main_async(args: argparse.Namespace) -> None:
    html = page(1024 * 1024)
    server, base = serve(html)
    workdir = Path(tempfile.mkdtemp(prefix="bench-web-"))
    config = {
        "network": {"allow_private": ["127.0.0.1"]},
        "permissions": {"network:outbound": "allow"},
    }
    tb = Toolbox(workdir, config, state_dir=workdir / "state")
    guard = net.Guard(["127.0.0.1"], resolver=_stub_resolver)
    # One SSL context for every bare client too, as the guarded client keeps one: building
    # one loads the CA bundle (~15 ms), which would otherwise dominate "new client".
    import certifi

    tls = ssl.create_default_context(cafile=certifi.where())
    reused = httpx.AsyncClient(trust_env=False, verify=tls)
    page_url, api_url = f"{base}/page", f"{base}/api"

    async def tool_fetch() -> None:
        env = await tb.arun("web_fetch", {"url": page_url, "max_length": 100_000})
        assert env["success"], env

    async def bare_fetch_convert() -> None:
        async with httpx.AsyncClient(trust_env=False, verify=tls) as client:
            r = await client.get(page_url)
        text, _ = decode_text(r.content, "utf-8", sniff_meta=True)
        convert_html(text, "markdown", page_url)

    async def bare_fetch() -> None:
        async with httpx.AsyncClient(trust_env=False, verify=tls) as client:
            await client.get(page_url)

    def convert_only() -> None:
        text, _ = decode_text(html, "utf-8", sniff_meta=True)
        convert_html(text, "markdown", page_url)

    async def tool_request() -> None:
        env = await tb.arun("http_request", {"url": api_url})
        assert env["success"], env

    async def guarded() -> None:
        await net.request("GET", api_url, guard=guard, timeout=30)

    async def bare_new() -> None:
        async with httpx.AsyncClient(trust_env=False, verify=tls) as client:
            await client.get(api_url)

    async def bare_reused() -> None:
        await reused.get(api_url)

    fetches: dict[str, list[float]] = {k: [] for k in ("tool", "bare+convert", "bare", "convert")}
    calls: dict[str, list[float]] = {
        k: [] for k in ("http_request", "guarded client", "bare httpx, new", "bare httpx, reused")
    }
    for func in (tool_fetch, tool_request, guarded, bare_new, bare_reused):  # warm up
        await func()
    for _ in range(args.rounds):
        fetches["tool"].append(await timed(tool_fetch, args.pages))
        fetches["bare+convert"].append(await timed(bare_fetch_convert, args.pages))
        fetches["bare"].append(await timed(bare_fetch, args.pages))
        start = time.perf_counter()
        for _ in range(args.pages):
            convert_only()
        fetches["convert"].append((time.perf_counter() - start) / args.pages)
        calls["http_request"].append(await timed(tool_request, args.calls))
        calls["guarded client"].append(await timed(guarded, args.calls))
        calls["bare httpx, new"].append(await timed(bare_new, args.calls))
        calls["bare httpx, reused"].append(await timed(bare_reused, args.calls))
    await reused.aclose()
    tb.close()
    server.shutdown()
    server.server_close()

    med = {k: statistics.median(v) * 1000 for k, v in {**fetches, **calls}.items()}
    print(f"web tools vs bare httpx on loopback — {describe()}")
    print(f"httpx {httpx.__version__}; {args.rounds} rounds, medians of per-round medians\n")
    print(f"1. a {len(html) / 2**20:.2f} MB HTML page to Markdown ({args.pages} per round)\n")
    print("| variant | ms per page |\n|---|--:|")
    print(f"| web_fetch (runner, guard, conversion) | {med['tool']:.1f} |")
    print(f"| bare httpx + the same conversion | {med['bare+convert']:.1f} |")
    print(f"| bare httpx, fetch only | {med['bare']:.1f} |")
    print(f"| conversion only (decode, clean, Markdown) | {med['convert']:.1f} |")
    verdict = "met" if med["convert"] < 1000 else "MISSED"
    print(f"\nconversion of 1 MB: {med['convert']:.0f} ms (target < 1000 ms: {verdict})\n")
    print(f"2. small JSON GET round trips ({args.calls} per round)\n")
    print("| variant | ms per call |\n|---|--:|")
    for key in calls:
        print(f"| {key} | {med[key]:.3f} |")
    overhead = med["guarded client"] - med["bare httpx, new"]
    verdict = "met" if overhead <= 1.0 else "MISSED"
    print(f"\nguard overhead (guarded client − bare httpx, new client): {overhead:.3f} ms "
          f"(target ≤ 1 ms: {verdict})")  # fmt: skip
    check = await timed(lambda: guard.addresses("localhost.example", 80), 2000)
    print(f"the check itself per connection (resolve via a stub, judge the address): "
          f"{check * 1e6:.1f} µs")  # fmt: skip
    runner = med["http_request"] - med["guarded client"]
    print(f"runner + tool on top (validation, policy, audit, output): {runner:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--pages", type=int, default=5)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
