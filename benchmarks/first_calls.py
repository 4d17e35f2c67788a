"""The first call of each toolset after start, against the raw primitive, in fresh processes.

    .venv/bin/python benchmarks/first_calls.py [--rounds 3] [--only NAME,...]

What a user waits for right after a server starts: for each toolset, a fresh interpreter
(a subprocess, like `serve mcp` just spawned) imports local-tools, builds a Toolbox (audit
on, plugins off, the state folder kept between rounds as a user's is) and makes the same
call twice through `Toolbox.arun` in one event loop: the first call pays whatever the
toolset starts lazily (the browser, the knowledge store, a language server, the
checkpoint store, ripgrep's location); the second is the steady cost. Beside it, the
floor, also in a fresh interpreter: the raw primitive doing the same work (read the
file, run rg, `subprocess.run`, open the sqlite file and insert, httpx GET, Playwright
launching the same Chromium, the language server spawned and initialized by a minimal
JSON-RPC client written here). Columns:

- start: the import (`from local_tools import Toolbox`; the floor: its library's import)
  plus building the Toolbox;
- first / second call: the call alone, after start;
- spawn → first answer: from `Popen` to the end of the first call (interpreter start,
  imports, start and the first call): what a client waits for.

Every variant runs once untimed first (the .pyc files, the page cache, the state
folder), then the rounds interleave ours and the floor case by case; medians. Workspaces
live in the bench cache ($LOCAL_TOOLS_BENCH_CACHE or ~/.cache/local-tools-bench), not
/tmp: the sandbox gives commands and language servers a private /tmp.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

# A child times a fresh interpreter: it imports no more than the floor needs (typing
# alone is ~20 ms, http.server ~50 ms); the parent's imports are in main().
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = "/usr/bin/chromium"
NODE_BIN = os.path.join(os.path.dirname(HERE), "tests", "lsp", "node", "node_modules", ".bin")
PAGE = (
    b"<!doctype html><html><head><title>Bench</title></head><body><h1>Notes</h1>"
    + b"".join(
        b"<h2>Part %d</h2><p>Paragraph %d with <a href='/p%d'>a link</a> and <b>bold</b> "
        b"text, long enough to look like an article someone would fetch.</p>" % (i, i, i)
        for i in range(200)
    )
    + b"</body></html>"
)


# -- the child: one fresh interpreter per sample ------------------------------------------


def _child(variant: str, case: str, params: dict[str, Any]) -> dict[str, float]:
    """Runs in the fresh interpreter; times are seconds."""
    began = time.perf_counter()
    if variant == "ours":
        from local_tools import Toolbox

        imported = time.perf_counter()
        tb = Toolbox(params["root"], params["config"], state_dir=params["state"], plugins=False)
        built = time.perf_counter()
        import asyncio

        async def calls() -> tuple[float, float, float]:
            stamps, walls = [time.perf_counter()], []
            for name, args in params["calls"]:
                result = await tb.arun(name, args)
                if not result["success"]:
                    raise SystemExit(f"{case}: {name} failed: {result['error']}")
                stamps.append(time.perf_counter())
                walls.append(time.time())
            return stamps[1] - stamps[0], stamps[2] - stamps[1], walls[0]

        try:
            first, second, first_done = asyncio.run(calls())
        finally:
            tb.close()
    else:
        floor = FLOORS[case]
        state: dict[str, Any] = {}
        floor.imports(state)
        imported = built = time.perf_counter()
        t0 = time.perf_counter()
        try:
            floor.call(state, params, 0)
            t1 = time.perf_counter()
            first_done = time.time()
            floor.call(state, params, 1)
            t2 = time.perf_counter()
        finally:
            floor.close(state)
        first, second = t1 - t0, t2 - t1
    return {
        "import": imported - began,
        "build": built - imported,
        "first": first,
        "second": second,
        "first_done": first_done,
    }


# -- floors: the raw primitive, same work ----------------------------------------------------


def _nothing(state: dict[str, Any]) -> None:
    del state


class Floor:
    def __init__(
        self,
        label: str,
        imports: Callable[[dict[str, Any]], None],
        call: Callable[[dict[str, Any], dict[str, Any], int], None],
        close: Callable[[dict[str, Any]], None] = _nothing,
    ) -> None:
        self.label, self.imports, self.call, self.close = label, imports, call, close


def _read(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    with open(os.path.join(p["root"], "notes.txt"), encoding="utf-8") as f:
        lines = f.readlines()[:2000]
    assert lines


def _rg(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    done = subprocess.run(
        [p["rg"], "--line-number", "--no-heading", "needle_7", "."],
        cwd=p["root"], capture_output=True, check=False,
    )  # fmt: skip
    assert done.stdout


def _rg_files(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    done = subprocess.run(
        [p["rg"], "--files", "--glob", "*.py", "."], cwd=p["root"], capture_output=True, check=False
    )
    assert done.stdout


def _sh(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    subprocess.run(["sh", "-c", p["command"]], cwd=p["root"], capture_output=True, check=True)


def _spawn_bg(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    state.setdefault("procs", []).append(
        subprocess.Popen(["sleep", "30"], cwd=p["root"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    )  # fmt: skip


def _kill_bg(state: dict[str, Any]) -> None:
    for proc in state.get("procs", []):
        proc.kill()
        proc.wait()


def _import_httpx(state: dict[str, Any]) -> None:
    import httpx

    state["httpx"] = httpx


def _get(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    if "client" not in state:
        state["client"] = state["httpx"].Client()
    assert state["client"].get(p["url"]).status_code == 200


def _import_sqlite(state: dict[str, Any]) -> None:
    import sqlite3

    state["sqlite3"] = sqlite3


def _insert(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    if "db" not in state:
        db = state["db"] = state["sqlite3"].connect(p["db"])
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS notes(id INTEGER PRIMARY KEY, content TEXT)")
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(content)")
    with state["db"]:
        text = f"first-call note {i} {time.time()}"
        state["db"].execute("INSERT INTO notes(content) VALUES (?)", (text,))
        state["db"].execute("INSERT INTO notes_fts(content) VALUES (?)", (text,))


def _close_db(state: dict[str, Any]) -> None:
    if "db" in state:
        state["db"].close()


def _write_json(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    path = os.path.join(p["root"], ".floor-todos.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(p["calls"][i][1]))
    with open(path, encoding="utf-8") as f:
        assert json.loads(f.read())


def _read_skill(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    with open(os.path.join(p["root"], ".skills", "demo", "SKILL.md"), encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("---")


def _import_playwright(state: dict[str, Any]) -> None:
    import asyncio

    from playwright.async_api import async_playwright

    state["loop"] = asyncio.new_event_loop()
    state["async_playwright"] = async_playwright


def _goto(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    async def visit() -> None:
        if "page" not in state:
            state["pw"] = await state["async_playwright"]().start()
            state["browser"] = await state["pw"].chromium.launch(executable_path=CHROMIUM)
            state["page"] = await state["browser"].new_page()
        await state["page"].goto(p["url"])
        await state["page"].aria_snapshot(mode="ai")

    state["loop"].run_until_complete(visit())


def _close_browser(state: dict[str, Any]) -> None:
    async def close() -> None:
        if "browser" in state:
            await state["browser"].close()
            await state["pw"].stop()

    state["loop"].run_until_complete(close())


class _Lsp:
    """Just enough LSP for the floor: spawn, initialize, didOpen, one request at a time."""

    def __init__(self, p: dict[str, Any]) -> None:
        self.p = p
        self.proc = subprocess.Popen(
            [p["lsp"]["command"], *p["lsp"]["args"]], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=p["root"],
            start_new_session=True,
        )  # fmt: skip
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read messages, answering the server's requests, until `done(message)`."""
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not length:
                raise RuntimeError(f"{self.p['lsp']['command']} exited")
            message: dict[str, Any] = json.loads(out.read(length))
            if "method" in message and "id" in message:  # the server asks us
                result = None
                if message["method"] == "workspace/configuration":
                    settings = self.p["lsp"]["settings"]
                    items = message["params"]["items"]
                    result = [settings.get(i.get("section", "")) for i in items]
                self.send({"id": message["id"], "result": result})
            elif done(message):
                return message

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        msg_id = self.next_id
        self.send({"id": msg_id, "method": method, "params": params})
        answer = self._until(lambda m: m.get("id") == msg_id and "method" not in m)
        return answer.get("result")

    def analysed(self, uri: str, pulls: bool) -> None:
        """As the engine does before the first question: the file's diagnostics."""
        if pulls:
            self.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        else:
            self._until(
                lambda m: (
                    m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri
                )
            )

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.send({"method": "exit"})
            self.proc.wait(5)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def _lsp_call(state: dict[str, Any], p: dict[str, Any], i: int) -> None:
    from pathlib import Path

    root, path = Path(p["root"]), Path(p["root"]) / p["file"]
    if "lsp" not in state:
        client = state["lsp"] = _Lsp(p)
        uri = root.as_uri()
        init = client.request("initialize", {
            "processId": os.getpid(), "rootUri": uri, "rootPath": str(root),
            "workspaceFolders": [{"uri": uri, "name": root.name}],
            "initializationOptions": p["lsp"]["init_options"],
            "capabilities": p["lsp"]["capabilities"],
        })  # fmt: skip
        client.send({"method": "initialized", "params": {}})
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": path.as_uri(), "languageId": p["lsp"]["language"], "version": 1,
            "text": path.read_text(encoding="utf-8")}}})  # fmt: skip
        client.analysed(path.as_uri(), "diagnosticProvider" in init["capabilities"])
    line, column = p["at"]
    result = state["lsp"].request("textDocument/definition", {
        "textDocument": {"uri": path.as_uri()},
        "position": {"line": line - 1, "character": column - 1}})  # fmt: skip
    assert result, "no definition found"


def _close_lsp(state: dict[str, Any]) -> None:
    if "lsp" in state:
        state["lsp"].close()


FLOORS: dict[str, Floor] = {
    "files": Floor("open + readlines", _nothing, _read),
    "search: grep": Floor("rg subprocess", _nothing, _rg),
    "search: glob": Floor("rg --files subprocess", _nothing, _rg_files),
    "shell": Floor("subprocess.run(sh -c)", _nothing, _sh),
    "processes": Floor("Popen, no wait", _nothing, _spawn_bg, _kill_bg),
    "checkpoints": Floor("subprocess.run(sh -c)", _nothing, _sh),
    "web": Floor("httpx GET", _import_httpx, _get),
    "memory": Floor("sqlite3 open + insert (FTS5)", _import_sqlite, _insert, _close_db),
    "todo": Floor("write + read a JSON file", _nothing, _write_json),
    "skills": Floor("read SKILL.md", _nothing, _read_skill),
    "browser": Floor(
        "Playwright launch + goto + aria_snapshot", _import_playwright, _goto, _close_browser
    ),
    "lsp (basedpyright)": Floor("spawn + initialize + definition", _nothing, _lsp_call, _close_lsp),
    "lsp (typescript)": Floor("spawn + initialize + definition", _nothing, _lsp_call, _close_lsp),
}


# -- the parent: workspaces, cases, rounds ---------------------------------------------------


def _page_server() -> Any:
    """A loopback server answering PAGE to every GET."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _tree(root: Path, files: int) -> None:
    """A small everyday project: `files` .py files of 40 lines in d*/ folders."""
    if (root / ".made").exists():
        return
    for i in range(files):
        folder = root / f"d{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{n}(x):\n    return x + {n}\n" for n in range(20))
        if i % 97 == 7:
            body += "needle_7 = True\n"
        (folder / f"m{i}.py").write_text(body, encoding="utf-8")
    (root / "notes.txt").write_text(
        "".join(f"line {n}: a note of an everyday text file\n" for n in range(500)),
        encoding="utf-8",
    )
    skill = root / ".skills" / "demo"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: A demo skill for the benchmark.\n---\n\n"
        + "Do the thing step by step.\n" * 40,
        encoding="utf-8",
    )
    (root / ".made").touch()


def _lsp_params(server: str, base: Path) -> dict[str, Any] | str:
    """The small project and the server's launch for both variants, or why not."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from local_tools.lsp.protocol import CLIENT_CAPABILITIES
    from local_tools.lsp.specs import BUILTIN_SPECS, find_command, pin_tsserver
    from lsp_projects import PY_PROJECT, TS_PROJECT, write_tree

    spec = next(s for s in BUILTIN_SPECS if s.name == server)
    command = find_command(spec.command)
    if command is None:
        return f"{spec.command} not installed ({spec.install})"
    spec = pin_tsserver(spec, command)
    python = server == "basedpyright"
    root = base / f"lsp-{server}"
    if not root.exists():
        write_tree(root, PY_PROJECT if python else TS_PROJECT)
    file = "shapes/use.py" if python else "src/use.ts"
    text = (root / file).read_text(encoding="utf-8").splitlines()
    line = next(n for n, t in enumerate(text) if "return p.norm" in t)
    at = [line + 1, text[line].index("norm") + 1]
    return {
        "root": str(root),
        "file": file,
        "at": at,
        "lsp": {
            "command": command,
            "args": list(spec.args),
            "init_options": dict(spec.init_options),
            "settings": dict(spec.settings),
            "capabilities": CLIENT_CAPABILITIES,
            "language": "python" if python else "typescript",
        },
        "calls": [
            ["lsp", {"operation": "definition", "path": file, "line": at[0], "column": at[1]}]
        ]
        * 2,
    }


def cases(base: Path, url: str) -> dict[str, dict[str, Any] | str]:
    """Each case's parameters (for both variants), or the reason it is skipped."""
    from local_tools.search.ripgrep import find_rg

    root = base / "ws"
    _tree(root, 2000)
    # The built-in rules, as a user has them: `true` is a read-only command they allow
    # (never checkpointed); what else runs is allowed by its own rule, as a user would.
    commands = {"sleep 30": "allow", "echo 1 > out.txt": "allow"}
    allow = {"execute:command": commands, "network:outbound": "allow"}
    common = {"root": str(root), "config": {"permissions": allow}}
    found = find_rg()
    rg = found.path if found is not None else None
    todos = [{"content": "write the report", "status": "in_progress"}, {"content": "test it"}]
    out: dict[str, dict[str, Any] | str] = {
        "files": {"calls": [["read_file", {"path": "notes.txt"}]] * 2},
        "search: grep": {"rg": rg, "calls": [["grep", {"pattern": "needle_7"}]] * 2},
        "search: glob": {"rg": rg, "calls": [["glob", {"pattern": "**/*.py"}]] * 2},
        "shell": {"command": "true", "calls": [["exec_cmd", {"command": "true"}]] * 2},
        "processes": {"calls": [["exec_cmd", {"command": "sleep 30", "background": True}]] * 2},
        "checkpoints": {
            "command": "echo 1 > out.txt",
            "calls": [["exec_cmd", {"command": "echo 1 > out.txt"}]] * 2,
        },
        "web": {
            "url": url,
            "config": {
                "permissions": allow,
                "network": {"allow_private": ["127.0.0.1"]},
            },
            "calls": [["web_fetch", {"url": url}]] * 2,
        },
        "memory": {
            "db": str(base / "floor-memory.sqlite"),
            "calls": [
                ["save_memory", {"kind": "insight", "content": "first-call note one"}],
                ["save_memory", {"kind": "insight", "content": "first-call note two"}],
            ],
        },
        "todo": {"calls": [["todo_write", {"todos": todos}], ["todo_write", {"todos": todos[:1]}]]},
        "skills": {"calls": [["skill", {"skill": "demo"}]] * 2},
    }
    if rg is None:
        out["search: grep"] = out["search: glob"] = "rg not found"
    if not os.path.exists(CHROMIUM):
        out["browser"] = f"{CHROMIUM} not installed"
    else:
        out["browser"] = {
            "url": url,
            "config": {
                "permissions": allow,
                "network": {"allow_private": ["127.0.0.1"]},
                "browser": {"executable": CHROMIUM},
            },
            "calls": [
                ["browser_navigate", {"url": url}],
                ["browser_navigate", {"url": url}],
            ],
        }
    for server, label in (
        ("basedpyright", "lsp (basedpyright)"),
        ("typescript", "lsp (typescript)"),
    ):
        out[label] = _lsp_params(server, base)
    for name, params in out.items():
        if isinstance(params, dict):
            params.setdefault("root", str(root))
            params.setdefault("config", common["config"])
            params["state"] = str(base / "state" / name.replace(" ", "_").replace(":", ""))
    return out


def sample(variant: str, case: str, params: dict[str, Any]) -> dict[str, float]:
    spawned = time.time()
    done = subprocess.run(
        [sys.executable, __file__, "--child", variant, case, json.dumps(params)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{variant} {case}: {done.stderr.strip()[-2000:]}")
    out: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    out["spawn_to_first"] = out.pop("first_done") - spawned
    return out


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f}" if ms < 10 else f"{ms:.0f}"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        kind, name, raw = sys.argv[2:5]
        print(json.dumps(_child(kind, name, json.loads(raw))))
        return
    import argparse
    import statistics

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated case names")
    opts = parser.parse_args()
    os.environ["PATH"] = os.pathsep.join([str(NODE_BIN), os.environ.get("PATH", "")])

    sys.path.insert(0, HERE)
    from corpus import default_cache
    from machine import describe

    base = default_cache() / "first-calls"
    base.mkdir(parents=True, exist_ok=True)
    server = _page_server()
    url = f"http://127.0.0.1:{server.server_port}/article"
    try:
        all_cases = cases(base, url)
        wanted = [c for c in opts.only.split(",") if c]
        run = {
            k: v
            for k, v in all_cases.items()
            if isinstance(v, dict) and (not wanted or k in wanted)
        }
        for case, params in run.items():  # untimed: .pyc, page cache, the state folder
            for variant in ("ours", "floor"):
                sample(variant, case, params)
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for r in range(opts.rounds):
            for case, params in run.items():
                order = ("ours", "floor") if r % 2 == 0 else ("floor", "ours")
                for variant in order:
                    results.setdefault((case, variant), []).append(sample(variant, case, params))
    finally:
        server.shutdown()

    def med(case: str, variant: str, key: str) -> float:
        return statistics.median(s[key] for s in results[(case, variant)])

    from local_tools.security.sandbox import sandbox_engine

    engine = sandbox_engine()
    print(f"First call of each toolset after start, vs the raw primitive — {describe()}")
    print(f"fresh interpreter per sample, {opts.rounds} rounds interleaved, medians, ms; "
          f"workspace: 2,000 .py files; sandbox for commands: {engine.name}\n")  # fmt: skip
    print(
        "| toolset | call | start ours (import + Toolbox) | floor | first call ours | floor "
        "| ours − floor | second call ours | floor | spawn → first answer ours | floor |"
    )
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for case, params in run.items():
        call = params["calls"][0][0]
        print(
            f"| {case} | `{call}` vs {FLOORS[case].label} "
            f"| {_ms(med(case, 'ours', 'import'))} + {_ms(med(case, 'ours', 'build'))} "
            f"| {_ms(med(case, 'floor', 'import'))} "
            f"| {_ms(med(case, 'ours', 'first'))} | {_ms(med(case, 'floor', 'first'))} "
            f"| {_ms(med(case, 'ours', 'first') - med(case, 'floor', 'first'))} "
            f"| {_ms(med(case, 'ours', 'second'))} | {_ms(med(case, 'floor', 'second'))} "
            f"| {_ms(med(case, 'ours', 'spawn_to_first'))} "
            f"| {_ms(med(case, 'floor', 'spawn_to_first'))} |"
        )
    for case, why in all_cases.items():
        if isinstance(why, str):
            print(f"| {case} | skipped: {why} | | | | | | | | | |")


if __name__ == "__main__":
    main()
