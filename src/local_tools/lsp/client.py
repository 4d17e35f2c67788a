"""One running language server for one (server, project root): start, documents,
diagnostics by document version, requests that can be cancelled.

Diagnostics count only for the text we last sent: each `sync` raises the document's
version, and a publish counts when it names that version, or (servers that send no
version) when it arrived after that version was sent. Anything older is never shown
as current, and a wait that runs out says so (`None`), never "clean".
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_tools.lsp.jsonrpc import JsonRpc, RpcError, ServerGone, kill_group
from local_tools.lsp.positions import path_of, uri_of
from local_tools.lsp.protocol import (
    CLIENT_CAPABILITIES,
    TSSERVER_REQUEST,
    from_tsserver,
    setting,
)
from local_tools.lsp.specs import ServerSpec, language_id

__all__ = ["LanguageServer", "Published", "RequestCancelled", "StartFailed"]

_STDERR_KEEP = 4096
_METHOD_NOT_FOUND = -32601
_POLL = 0.05  # how often a waiting request looks for a cancel


class StartFailed(Exception):
    """The server did not start (missing, crashed at once, or never answered initialize)."""


class RequestCancelled(Exception):
    """The caller cancelled while waiting; the request was cancelled at the server too."""


@dataclass
class Published:
    """The newest diagnostics the server published for one document."""

    version: int | None  # the document version they are for, when the server says
    sent_seq: int  # our sync counter when they arrived
    items: list[dict[str, Any]]


@dataclass
class _Document:
    uri: str
    text: str
    version: int
    sent_seq: int  # the sync counter value when this version was sent
    language: str


@dataclass
class LanguageServer:
    spec: ServerSpec
    root: Path
    argv: Sequence[str]
    env: Mapping[str, str]
    max_open: int = 64
    on_exit: Callable[[LanguageServer], None] | None = None
    pass_fds: Sequence[int] = ()
    # Sent as initialize's processId, which servers watch to exit with us; None when the
    # server runs in a PID namespace of its own (bwrap), where our pid means nothing.
    parent_pid: int | None = field(default_factory=os.getpid)
    started_at: float = 0.0
    last_used: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._docs: collections.OrderedDict[str, _Document] = collections.OrderedDict()
        self._published: dict[str, Published] = {}
        self._seq = 0
        self._rpc: JsonRpc | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._ready: Future[None] = Future()
        self.capabilities: dict[str, Any] = {}
        self.server_info = ""  # its serverInfo.name
        self._standard_pull: bool | None = None  # textDocument/diagnostic works here
        self.closed = False

    # --- life --------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def ready(self) -> Future[None]:
        """Done once initialize was answered (or failed: StartFailed)."""
        return self._ready

    @property
    def alive(self) -> bool:
        return self._rpc is not None and self._rpc.alive and not self.closed

    def start(self, timeout: float) -> None:
        """Spawn and initialize; blocks up to `timeout` (run it in a thread). A `close`
        that overtakes it wins: nothing is left running and `ready` says stopped."""
        self.started_at = time.monotonic()
        try:
            self._spawn()
            if self.closed:  # closed while spawning: close() found no process to stop
                raise StartFailed(f"{self.name} was stopped while starting")
            assert self._rpc is not None
            _, init = self._rpc.request("initialize", self._initialize_params())
            try:
                result = init.result(timeout)
            except FutureTimeout:
                raise StartFailed(
                    f"{self.name} did not answer initialize within {timeout:g} s"
                ) from None
            except (ServerGone, RpcError) as exc:
                raise StartFailed(
                    f"{self.name} failed to start: {exc}{self._stderr_tail()}"
                ) from None
            caps = result.get("capabilities") if isinstance(result, dict) else None
            self.capabilities = caps if isinstance(caps, dict) else {}
            info = result.get("serverInfo") if isinstance(result, dict) else None
            name = info.get("name") if isinstance(info, dict) else None
            self.server_info = name if isinstance(name, str) else ""
            self._rpc.notify("initialized", {})
        except (StartFailed, ServerGone) as exc:
            failed = (
                exc if isinstance(exc, StartFailed) else StartFailed(f"{exc}{self._stderr_tail()}")
            )
            self._settle(failed)
            self.closed = False  # let close() run fully even if it ran before the spawn
            self.close()
            return
        self._settle(None)

    def _settle(self, failed: StartFailed | None) -> None:
        with self._lock:  # start and close may both try
            if self._ready.done():
                return
            if failed is None:
                self._ready.set_result(None)
            else:
                self._ready.set_exception(failed)

    def _spawn(self) -> None:
        try:
            self._proc = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.root,
                env=dict(self.env),
                start_new_session=True,
                pass_fds=tuple(self.pass_fds),
            )
        except OSError as exc:
            raise StartFailed(f"{self.name} could not be started: {exc.strerror or exc}") from None
        self._rpc = JsonRpc(self._proc, self._notification, self._request, name=self.name)
        threading.Thread(
            target=self._drain_stderr, name=f"lsp-{self.name}-err", daemon=True
        ).start()
        threading.Thread(target=self._watch, name=f"lsp-{self.name}-wait", daemon=True).start()

    def _watch(self) -> None:
        proc = self._proc
        if proc is None:
            return
        proc.wait()
        with self._lock:
            self._lock.notify_all()
        if not self.closed and self.on_exit is not None:
            self.on_exit(self)

    def _drain_stderr(self) -> None:
        proc = self._proc
        if proc is None or proc.stderr is None:
            return
        with contextlib.suppress(OSError, ValueError):
            for line in iter(lambda: proc.stderr.readline(2048), b""):  # type: ignore[union-attr]
                self._stderr.append(line)

    def _stderr_tail(self) -> str:
        text = b"".join(self._stderr)[-_STDERR_KEEP:].decode("utf-8", "replace").strip()
        return f"; its last output: {text[-600:]}" if text else ""

    @property
    def exit_reason(self) -> str:
        gone = self._rpc.gone_reason if self._rpc is not None else None
        code = self._proc.poll() if self._proc is not None else None
        reason = gone or (f"{self.name} exited with status {code}" if code is not None else "")
        return f"{reason}{self._stderr_tail()}"

    def close(self, grace: float = 1.0) -> None:
        """Shut down politely, then kill what is left (the whole process group)."""
        if self.closed:
            return
        self.closed = True
        rpc, proc = self._rpc, self._proc
        if rpc is not None and rpc.alive and self._ready.done() and not self._ready.exception():
            _, fut = rpc.request("shutdown", None)
            with contextlib.suppress(Exception):
                fut.result(grace)
            with contextlib.suppress(ServerGone):
                rpc.notify("exit", None)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace if rpc is not None else 0.1)
            kill_group(proc)
        if rpc is not None:
            rpc.close()
        if proc is not None and proc.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stderr.close()
        self._settle(StartFailed(f"{self.name} was stopped while starting"))
        with self._lock:
            self._lock.notify_all()

    # --- documents ---------------------------------------------------------------

    def sync(self, path: Path, text: str) -> int:
        """Send `text` as the document's content (open, or a full-text change); its version."""
        rpc = self._live_rpc()
        uri = uri_of(path)
        self.last_used = time.monotonic()
        with self._lock:
            doc = self._docs.get(uri)
            self._seq += 1
            if doc is None:
                doc = _Document(uri, text, 1, self._seq, language_id(path))
                self._docs[uri] = doc
                self._evict(rpc)
                rpc.notify(
                    "textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": doc.language,
                                      "version": 1, "text": text}},
                )  # fmt: skip
            elif doc.text != text:
                doc.version += 1
                doc.text = text
                doc.sent_seq = self._seq
                rpc.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": doc.version},
                     "contentChanges": [{"text": text}]},
                )  # fmt: skip
            self._docs.move_to_end(uri)
            return doc.version

    def _evict(self, rpc: JsonRpc) -> None:
        while len(self._docs) > self.max_open:
            uri, _ = self._docs.popitem(last=False)
            self._published.pop(uri, None)
            rpc.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def text_of(self, path: Path) -> str | None:
        with self._lock:
            doc = self._docs.get(uri_of(path))
            return doc.text if doc is not None else None

    def open_paths(self) -> list[Path]:
        with self._lock:
            return [p for p in (path_of(u) for u in self._docs) if p is not None]

    def diagnostics(
        self, path: Path, deadline: float, cancelled: Callable[[], bool] = lambda: False
    ) -> list[dict[str, Any]] | None:
        """The diagnostics for the document's current version, waiting until `deadline`
        (time.monotonic()); None when they did not come in time (pending).

        Asked for where the server can be asked (`pulls_diagnostics`): a pushed empty
        list is not always an answer (pyright publishes one for every open file it has
        not checked yet, then the real list). Otherwise the newest publish for the
        version last synced."""
        if self.pulls_diagnostics:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                return self.pull_diagnostics(path, left, cancelled)
            except TimeoutError:
                return None
            except RpcError as exc:
                if exc.code != _METHOD_NOT_FOUND:
                    raise
                self._standard_pull = False  # it said so: use what it publishes
        uri = uri_of(path)
        with self._lock:
            while True:
                doc = self._docs.get(uri)
                if doc is None:
                    return None
                pub = self._published.get(uri)
                if pub is not None and _current(pub, doc):
                    return list(pub.items)
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive:
                    return None
                self._lock.wait(min(left, 0.5))

    @property
    def sync_count(self) -> int:
        """How many syncs were sent so far: a mark for `published_since`."""
        with self._lock:
            return self._seq

    def published_since(self, mark: int) -> dict[Path, list[dict[str, Any]]]:
        """Current diagnostics of open documents that arrived after sync number `mark`
        was sent (what a server re-published after a change)."""
        out: dict[Path, list[dict[str, Any]]] = {}
        with self._lock:
            for uri, doc in self._docs.items():
                pub = self._published.get(uri)
                path = path_of(uri)
                if pub is None or path is None or pub.sent_seq < mark or not _current(pub, doc):
                    continue
                out[path] = list(pub.items)
        return out

    def wait_published(self, paths: Sequence[Path], mark: int, deadline: float) -> None:
        """Wait until each of `paths` has diagnostics published after sync `mark`, or
        until `deadline` (time.monotonic())."""
        uris = [uri_of(p) for p in paths]
        with self._lock:
            while True:
                missing = [
                    u for u in uris
                    if u in self._docs
                    and ((pub := self._published.get(u)) is None or pub.sent_seq < mark)
                ]  # fmt: skip
                left = deadline - time.monotonic()
                if not missing or left <= 0 or not self.alive:
                    return
                self._lock.wait(min(left, 0.5))

    @property
    def pulls_diagnostics(self) -> bool:
        """Whether `pull_diagnostics` works here: LSP's textDocument/diagnostic (declared,
        or pyright's, which answers it without declaring it), else the tsserver request
        typescript-language-server offers (it publishes nothing when a file stays clean)."""
        return self._tsserver_pull or self._pulls_standard

    @property
    def _tsserver_pull(self) -> bool:
        provider = self.capabilities.get("executeCommandProvider")
        commands = provider.get("commands") if isinstance(provider, dict) else None
        return isinstance(commands, list) and TSSERVER_REQUEST in commands

    @property
    def _pulls_standard(self) -> bool:
        if self._standard_pull is not None:
            return self._standard_pull
        return "diagnosticProvider" in self.capabilities or "pyright" in self.server_info

    def pull_diagnostics(
        self, path: Path, timeout: float, cancelled: Callable[[], bool]
    ) -> list[dict[str, Any]]:
        """The diagnostics of the document's synced text, asked for (see
        `pulls_diagnostics`), in the LSP shape publishDiagnostics carries. Raises as
        `request` does."""
        if not self._tsserver_pull:
            report = self.request(
                "textDocument/diagnostic", {"textDocument": {"uri": uri_of(path)}}, timeout,
                cancelled,
            )  # fmt: skip
            items = report.get("items") if isinstance(report, dict) else None
            if not isinstance(items, list):  # "unchanged" needs a resultId we never send
                raise RpcError(-32603, f"{self.name} answered a diagnostic pull without items")
            return [d for d in items if isinstance(d, dict)]
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        for command in ("syntacticDiagnosticsSync", "semanticDiagnosticsSync"):
            left = max(deadline - time.monotonic(), 0.01)
            params = {"command": TSSERVER_REQUEST, "arguments": [command, {"file": uri_of(path)}]}
            answer = self.request("workspace/executeCommand", params, left, cancelled)
            body = answer.get("body") if isinstance(answer, dict) else None
            if not isinstance(body, list):
                raise RpcError(-32603, f"{self.name} answered {command} without diagnostics")
            out += [from_tsserver(d) for d in body if isinstance(d, dict)]
        return out

    def known_diagnostics(self) -> dict[Path, list[dict[str, Any]]]:
        """Every open document's current diagnostics that have arrived."""
        out: dict[Path, list[dict[str, Any]]] = {}
        with self._lock:
            for uri, doc in self._docs.items():
                pub = self._published.get(uri)
                path = path_of(uri)
                if pub is not None and path is not None and _current(pub, doc):
                    out[path] = list(pub.items)
        return out

    # --- requests ----------------------------------------------------------------

    def request(
        self, method: str, params: Any, timeout: float, cancelled: Callable[[], bool]
    ) -> Any:
        """A request's result; TimeoutError past `timeout`, RequestCancelled when
        `cancelled()` turns true (either way the server is told to drop it)."""
        rpc = self._live_rpc()
        self.last_used = time.monotonic()
        msg_id, future = rpc.request(method, params)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(_POLL)
            except FutureTimeout:
                pass
            except CancelledError:
                raise RequestCancelled(method) from None
            if cancelled():
                rpc.cancel(msg_id)
                raise RequestCancelled(method)
            if time.monotonic() >= deadline:
                rpc.cancel(msg_id)
                raise TimeoutError(f"{self.name} did not answer {method} within {timeout:g} s")

    def _live_rpc(self) -> JsonRpc:
        rpc = self._rpc
        if rpc is None or self.closed or not rpc.alive:
            raise ServerGone(self.exit_reason or f"{self.name} is not running")
        return rpc

    # --- from the server ---------------------------------------------------------

    def _notification(self, method: str, params: Any) -> None:
        if method != "textDocument/publishDiagnostics" or not isinstance(params, dict):
            return
        uri = params.get("uri")
        items = params.get("diagnostics")
        if not isinstance(uri, str) or not isinstance(items, list):
            return
        version = params.get("version")
        with self._lock:
            doc = self._docs.get(uri)
            if doc is None:
                return
            self._published[uri] = Published(
                version if isinstance(version, int) else None,
                self._seq,
                [d for d in items if isinstance(d, dict)],
            )
            self._lock.notify_all()

    def _request(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            items = params.get("items", []) if isinstance(params, dict) else []
            return [
                setting(self.spec.settings, item.get("section"))
                for item in items
                if isinstance(item, dict)
            ]
        if method == "workspace/workspaceFolders":
            return [{"uri": uri_of(self.root), "name": self.root.name}]
        if method == "workspace/applyEdit":  # a server never writes: rename goes through us
            return {"applied": False, "failureReason": "local-tools applies edits itself"}
        if method in (
            "client/registerCapability", "client/unregisterCapability",
            "window/workDoneProgress/create", "window/showMessageRequest",
            "workspace/diagnostic/refresh", "workspace/semanticTokens/refresh",
            "workspace/inlayHint/refresh", "workspace/codeLens/refresh",
        ):  # fmt: skip
            return None
        raise LookupError(method)

    def _initialize_params(self) -> dict[str, Any]:
        root_uri = uri_of(self.root)
        return {
            "processId": self.parent_pid,
            "clientInfo": {"name": "local-tools"},
            "rootUri": root_uri,
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": root_uri, "name": self.root.name}],
            "initializationOptions": dict(self.spec.init_options),
            "capabilities": CLIENT_CAPABILITIES,
        }


def _current(pub: Published, doc: _Document) -> bool:
    if pub.version is not None:
        return pub.version == doc.version
    return pub.sent_seq >= doc.sent_seq
