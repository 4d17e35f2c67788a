"""Language servers through local-tools' engine against a bare client of the same server.

    .venv/bin/python benchmarks/lsp.py [--quick] [--rounds 5]

For basedpyright and typescript-language-server, on a small project (tests/lsp_projects.py)
and a large one (Django's sdist from PyPI, ~2,800 .py files; rxjs's TypeScript sources
from npm), each variant measures in one run:
- cold start: spawn until the first diagnostics for the file opened;
- edit: a full-text change (adding or removing a type error) until the diagnostics for
  that version, on the warm server (median of N);
- definition and references at one identifier (median of N).

Variants: `bare` is a minimal JSON-RPC client written here (a reader thread, futures,
the same initialize capabilities and workspace/configuration answers: no engine);
`engine` is LspManager + LanguageServer, unconfined; `confined` is the toolbox's manager
(lsp/confine.py: bwrap, read-only, no network, private TMPDIR). Each variant starts its
own server. The large projects are downloaded once into the bench cache
($LOCAL_TOOLS_BENCH_CACHE or ~/.cache/local-tools-bench/lsp) with pip and npm.
`--quick`: the small projects only, 3 rounds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus import default_cache  # noqa: E402
from local_tools.core.context import ToolContext  # noqa: E402
from local_tools.lsp.client import _CLIENT_CAPABILITIES, LanguageServer  # noqa: E402
from local_tools.lsp.confine import lsp_manager  # noqa: E402
from local_tools.lsp.manager import LspManager, LspSettings  # noqa: E402
from local_tools.lsp.positions import uri_of  # noqa: E402
from local_tools.lsp.specs import BUILTIN_SPECS, ServerSpec, find_command  # noqa: E402
from local_tools.security.sandbox import sandbox_engine  # noqa: E402
from local_tools.toolbox import Toolbox  # noqa: E402
from lsp_projects import PY_PROJECT, TS_PROJECT, write_tree  # noqa: E402
from machine import describe  # noqa: E402

NODE_BIN = HERE.parent / "tests" / "lsp" / "node" / "node_modules" / ".bin"
TIMEOUT = 180.0


@dataclass(frozen=True)
class Project:
    label: str
    server: str  # a BUILTIN_SPECS name
    root: Path
    files: int
    path: Path  # the file opened and edited
    at: tuple[int, int]  # 0-based line, UTF-16 column of the identifier asked about
    broken: str  # appended to the file: one type error


def _position(path: Path, pattern: str, token: str) -> tuple[int, int]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if re.search(pattern, line):
            return number, line.index(token)
    raise SystemExit(f"{path}: no line matches {pattern!r}")


def _count(root: Path, suffix: str) -> int:
    return sum(1 for _ in root.rglob(f"*{suffix}"))


PY_ERROR = '\n_bench_oops: int = "not a number"\n'
TS_ERROR = '\nexport const benchOops: number = "not a number";\n'


def small_projects(base: Path) -> list[Project]:
    py = write_tree(base / "small-py", PY_PROJECT)
    ts = write_tree(base / "small-ts", TS_PROJECT)
    py_use, ts_use = py / "shapes" / "use.py", ts / "src" / "use.ts"
    return [
        Project("small (3 .py)", "basedpyright", py, 3, py_use,
                _position(py_use, r"return p\.norm", "norm"), PY_ERROR),
        Project("small (2 .ts)", "typescript", ts, 2, ts_use,
                _position(ts_use, r"return p\.norm", "norm"), TS_ERROR),
    ]  # fmt: skip


def large_projects(cache: Path) -> list[Project]:
    """Django 5.1.4 (sdist, PyPI) and rxjs 7.8.1's src/ (npm), fetched once."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    django = cache / "django-5.1.4"
    if not (django / ".unpacked").exists():
        if not list(downloads.glob("[Dd]jango-5.1.4.tar.gz")):
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 "-q", "-d", str(downloads), "django==5.1.4"],
                check=True,
            )  # fmt: skip
        _unpack(next(downloads.glob("[Dd]jango-5.1.4.tar.gz")), django)
    rxjs = cache / "rxjs-7.8.1"
    if not (rxjs / ".unpacked").exists():
        if not (downloads / "rxjs-7.8.1.tgz").exists():
            subprocess.run(
                ["npm", "pack", "rxjs@7.8.1", "--pack-destination", str(downloads)],
                check=True, capture_output=True,
            )  # fmt: skip
        _unpack(downloads / "rxjs-7.8.1.tgz", rxjs)
        (rxjs / "package" / "src" / "tsconfig.json").write_text(
            '{"compilerOptions": {"strict": true, "target": "es2017", "module": "commonjs",'
            ' "lib": ["es2017", "dom"], "noEmit": true}, "include": ["**/*.ts"]}\n'
        )
    dj_root = next(p for p in django.iterdir() if p.is_dir())
    dj_file = dj_root / "django" / "views" / "generic" / "detail.py"
    rx_root = rxjs / "package" / "src"
    rx_file = rx_root / "internal" / "operators" / "map.ts"
    return [
        Project(f"Django 5.1.4 ({_count(dj_root, '.py')} .py)", "basedpyright", dj_root,
                _count(dj_root, ".py"), dj_file,
                _position(dj_file, r"raise Http404\(", "Http404"), PY_ERROR),
        Project(f"rxjs 7.8.1 src ({_count(rx_root, '.ts')} .ts)", "typescript", rx_root,
                _count(rx_root, ".ts"), rx_file,
                _position(rx_file, r"return operate\(", "operate"), TS_ERROR),
    ]  # fmt: skip


def _unpack(archive: Path, into: Path) -> None:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (into / ".unpacked").touch()


# --- the bare client ------------------------------------------------------------------


class Bare:
    """Just enough LSP: framing, a reader thread, requests as futures, diagnostics by
    version; the server's requests answered as our engine answers them."""

    def __init__(self, spec: ServerSpec, root: Path) -> None:
        command = find_command(spec.command)
        assert command is not None, spec.command
        self.spec, self.root = spec, root
        self.proc = subprocess.Popen(
            [command, *spec.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=root, start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.ids = itertools.count(1)
        self.pending: dict[int, Future[Any]] = {}
        self.published: dict[str, list[tuple[int | None, float]]] = {}
        self.cond = threading.Condition()
        self.versions: dict[str, int] = {}
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.stdin.flush()

    def _read(self, out: IO[bytes]) -> None:
        while True:
            length = -1
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(out.read(length))
            method = message.get("method")
            if method is None:
                future = self.pending.pop(message["id"], None)
                if future is not None:
                    future.set_result(message.get("result"))
            elif "id" in message:
                self._send({"jsonrpc": "2.0", "id": message["id"],
                            "result": self._answer(method, message.get("params"))})  # fmt: skip
            elif method == "textDocument/publishDiagnostics":
                params = message["params"]
                with self.cond:
                    self.published.setdefault(params["uri"], []).append(
                        (params.get("version"), time.perf_counter())
                    )
                    self.cond.notify_all()

    def _answer(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            return [self.spec.settings.get(i.get("section", "")) for i in params["items"]]
        return None

    def request(self, method: str, params: Any) -> Any:
        msg_id = next(self.ids)
        future: Future[Any] = Future()
        self.pending[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return future.result(TIMEOUT)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def start(self) -> None:
        uri = uri_of(self.root)
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": uri, "rootPath": str(self.root),
            "workspaceFolders": [{"uri": uri, "name": self.root.name}],
            "initializationOptions": dict(self.spec.init_options),
            "capabilities": _CLIENT_CAPABILITIES,
        })  # fmt: skip
        self.notify("initialized", {})

    def sync(self, path: Path, text: str, language: str) -> float:
        """Send the text; returns when it was sent."""
        uri = uri_of(path)
        version = self.versions.get(uri, 0) + 1
        self.versions[uri] = version
        sent = time.perf_counter()
        if version == 1:
            self.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": language, "version": 1, "text": text}})  # fmt: skip
        else:
            self.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}]})  # fmt: skip
        return sent

    def diagnostics(self, path: Path, sent: float) -> None:
        uri, version = uri_of(path), self.versions[uri_of(path)]
        deadline = time.monotonic() + TIMEOUT
        with self.cond:
            while not any(
                v == version or (v is None and at >= sent) for v, at in self.published.get(uri, [])
            ):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"bare: no diagnostics for {path.name} v{version}")
                self.cond.wait(0.5)

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(3)
        except Exception:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()


# --- the variants ---------------------------------------------------------------------

Timings = dict[str, float]


def _edits(project: Project) -> Iterator[str]:
    clean = project.path.read_text(encoding="utf-8")
    while True:
        yield clean + project.broken
        yield clean


def _positional(project: Project) -> dict[str, Any]:
    line, character = project.at
    return {"textDocument": {"uri": uri_of(project.path)},
            "position": {"line": line, "character": character}}  # fmt: skip


def _nav_params(project: Project) -> tuple[dict[str, Any], dict[str, Any]]:
    pos = _positional(project)
    return pos, {**pos, "context": {"includeDeclaration": True}}


def run_bare(project: Project, rounds: int) -> Timings:
    spec = next(s for s in BUILTIN_SPECS if s.name == project.server)
    language = "python" if project.server == "basedpyright" else "typescript"
    began = time.perf_counter()
    client = Bare(spec, project.root)
    try:
        client.start()
        text = project.path.read_text(encoding="utf-8")
        client.diagnostics(project.path, client.sync(project.path, text, language))
        out: Timings = {"cold": time.perf_counter() - began}
        edits, texts = [], _edits(project)
        for _ in range(rounds):
            sent = client.sync(project.path, next(texts), language)
            client.diagnostics(project.path, sent)
            edits.append(time.perf_counter() - sent)
        client.diagnostics(project.path, client.sync(project.path, text, language))
        definition, references = _nav_params(project)
        out["edit"] = statistics.median(edits)
        out["definition"] = _median(rounds, lambda: client.request("textDocument/definition",
                                                                   definition))  # fmt: skip
        out["references"] = _median(rounds, lambda: client.request("textDocument/references",
                                                                   references))  # fmt: skip
        return out
    finally:
        client.close()


def run_engine(project: Project, rounds: int, manager: LspManager) -> Timings:
    began = time.perf_counter()
    server = manager.server_for(project.path)
    assert isinstance(server, LanguageServer), server
    server.ready.result(TIMEOUT)
    text = project.path.read_text(encoding="utf-8")
    server.sync(project.path, text)
    _diagnostics(server, project.path)
    out: Timings = {"cold": time.perf_counter() - began}
    edits, texts = [], _edits(project)
    for _ in range(rounds):
        sent = time.perf_counter()
        server.sync(project.path, next(texts))
        _diagnostics(server, project.path)
        edits.append(time.perf_counter() - sent)
    server.sync(project.path, text)
    _diagnostics(server, project.path)
    definition, references = _nav_params(project)

    def ask(method: str, params: dict[str, Any]) -> Any:
        return server.request(method, params, TIMEOUT, lambda: False)

    out["edit"] = statistics.median(edits)
    out["definition"] = _median(rounds, lambda: ask("textDocument/definition", definition))
    out["references"] = _median(rounds, lambda: ask("textDocument/references", references))
    return out


def _diagnostics(server: LanguageServer, path: Path) -> None:
    if server.diagnostics(path, time.monotonic() + TIMEOUT) is None:
        raise TimeoutError(f"{server.name}: no diagnostics for {path.name}: {server.exit_reason}")


def _median(rounds: int, call: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - began)
        assert result, "an empty answer: the position asked about is wrong"
    return statistics.median(times)


def engine_manager(project: Project) -> LspManager:
    return LspManager(LspSettings(start_timeout=TIMEOUT, request_timeout=TIMEOUT), [project.root])


def confined_toolbox(project: Project, state: Path) -> tuple[Toolbox, LspManager]:
    tb = Toolbox(project.root, {"lsp": {"start_timeout": TIMEOUT}}, state_dir=state,
                 audit=False, plugins=False)  # fmt: skip
    ctx = ToolContext(
        call_id="bench", user_id="bench", tool="bench", jail=tb.jail, config=tb.config,
        policy=tb.policy, state_dir=tb.state_dir, spill_dir=tb.spill_dir,
        resources=tb.runner.resources,
    )  # fmt: skip
    return tb, lsp_manager(ctx)


def measure(project: Project, rounds: int, state: Path) -> dict[str, Timings]:
    results: dict[str, Timings] = {"bare": run_bare(project, rounds)}
    manager = engine_manager(project)
    try:
        results["engine"] = run_engine(project, rounds, manager)
    finally:
        manager.close()
    if sandbox_engine().name != "off":
        tb, confined = confined_toolbox(project, state)
        try:
            results["confined"] = run_engine(project, rounds, confined)
        finally:
            tb.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small projects, 3 rounds")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    rounds = 3 if opts.quick else opts.rounds
    os.environ["PATH"] = os.pathsep.join([str(NODE_BIN), os.environ.get("PATH", "")])
    cache = default_cache() / "lsp"
    cache.mkdir(parents=True, exist_ok=True)
    # Not under /tmp: the sandbox's /tmp is private, a project there would be hidden.
    scratch = Path(tempfile.mkdtemp(prefix="lsp-bench-", dir=cache))
    try:
        projects = small_projects(scratch)
        if not opts.quick:
            projects += large_projects(cache)
        engine = sandbox_engine()
        print(f"Language servers: engine vs a bare client — {describe()}")
        print(f"sandbox for `confined`: {engine.name} ({engine.detail}); "
              f"edit, definition, references: median of {rounds}\n")  # fmt: skip
        print("| server | project | variant | cold start to diagnostics | edit to diagnostics "
              "| definition | references |")  # fmt: skip
        print("|---|---|---|--:|--:|--:|--:|")
        for project in projects:
            spec = next(s for s in BUILTIN_SPECS if s.name == project.server)
            if find_command(spec.command) is None:
                print(f"| {spec.command} | {project.label} | not installed: {spec.install} "
                      "| | | | |")  # fmt: skip
                continue
            for variant, t in measure(project, rounds, scratch / "state").items():
                print(
                    f"| {spec.command} | {project.label} | {variant} | {t['cold'] * 1000:.0f} ms "
                    f"| {t['edit'] * 1000:.0f} ms | {t['definition'] * 1000:.1f} ms "
                    f"| {t['references'] * 1000:.1f} ms |",
                    flush=True,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
