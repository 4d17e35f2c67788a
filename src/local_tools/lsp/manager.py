"""The toolbox's language servers: one per (server, project root), started on first need.

A file goes to the first configured or built-in server that claims its extension and is
installed (specs.py); the server is rooted at the nearest folder holding one of its
root markers, never above the workspace root that holds the file. It starts in a thread
of its own so no call waits longer than it chose to; a server that dies (or fails to
start) is restarted once (a second failure within five minutes leaves it unavailable,
with its reason and last output); servers idle past `[lsp] idle_timeout` are stopped,
and all of them with the toolbox. Whatever a launch made for a server (confine.py's
private TMPDIR) is removed when that server is gone.

Servers run confined like commands (security/sandbox.py): the file system read-only, a
private TMPDIR, no network, the state folder and credential stores hidden. Without
seccomp's Unix-socket filter: node-based servers talk to their own workers over
socketpairs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from local_tools.lsp.client import LanguageServer
from local_tools.lsp.jsonrpc import kill_group
from local_tools.lsp.specs import ServerSpec, find_command, pin_tsserver, server_specs, specs_for

__all__ = ["Launch", "Launched", "LspManager", "LspSettings", "Unavailable", "plain_launch"]

log = logging.getLogger(__name__)

_RESTART_WINDOW = 300.0  # a second failure within this many seconds is final


@dataclass(frozen=True)
class Unavailable:
    """No server can handle a file: why, and what to install."""

    language: str
    reason: str


@dataclass(frozen=True)
class LspSettings:
    enabled: bool = True
    wait: float = 2.0  # seconds an edit waits for diagnostics at most
    start_timeout: float = 60.0  # for initialize to be answered
    request_timeout: float = 30.0
    idle_timeout: float = 600.0
    max_open_documents: int = 64
    servers: Mapping[str, object] = field(default_factory=dict)  # [lsp.NAME]


class Launched(NamedTuple):
    """How to spawn one server, and what to undo once it is gone."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    cleanup: Callable[[], None] | None = None  # e.g. remove its private TMPDIR
    # In a PID namespace of its own (bwrap) our process id means nothing to the server,
    # and servers built on vscode-languageserver exit within 3 s when that id is not a
    # live process: initialize then sends processId null.
    own_pids: bool = False


# (spec, root, resolved command) -> Launched
Launch = Callable[[ServerSpec, Path, str], Launched]


@dataclass
class _Entry:
    server: LanguageServer
    cleanup: Callable[[], None] | None
    failed_at: float | None = None  # when its exit or failed start was counted


class LspManager:
    def __init__(
        self,
        settings: LspSettings,
        roots: Sequence[Path],
        launch: Launch | None = None,
    ) -> None:
        self.settings = settings
        self.specs = server_specs(settings.servers)
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self._launch = launch or plain_launch
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, Path], _Entry] = {}
        self._failures: dict[tuple[str, Path], list[float]] = {}
        self._closed = False
        self._wake = threading.Event()
        # Often enough that a short idle_timeout (tests, a small machine) is honoured.
        self._poll = max(0.05, min(30.0, settings.idle_timeout / 2))
        self._reaper = threading.Thread(target=self._reap, name="lsp-reaper", daemon=True)
        self._reaper.start()

    # --- which server ------------------------------------------------------------

    def claims(self, path: Path) -> bool:
        """Whether any server (installed or not) is meant for this file."""
        return bool(specs_for(path, self.specs))

    def server_for(self, path: Path) -> LanguageServer | Unavailable | None:
        """The server for `path` (started if needed; maybe still starting), Unavailable,
        or None when no server is meant for this kind of file."""
        candidates = specs_for(path, self.specs)
        if not candidates:
            return None
        if not self.settings.enabled:
            return Unavailable(candidates[0].language, "language servers are off ([lsp] enabled)")
        for spec in candidates:
            command = find_command(spec.command)
            if command is not None:
                return self._server(spec, command, self.root_of(path, spec))
        language = candidates[0].language
        tried = "; ".join(f"{s.command}: {s.install}" for s in candidates)
        return Unavailable(language, f"no {language} language server is installed ({tried})")

    def root_of(self, path: Path, spec: ServerSpec) -> Path:
        """The nearest folder above `path` with one of the markers, within its root."""
        real = Path(os.path.realpath(path))
        bound = next((r for r in self.roots if real == r or r in real.parents), real.parent)
        folder = real.parent
        while True:
            if any((folder / marker).exists() for marker in spec.root_markers):
                return folder
            if folder == bound or folder.parent == folder:
                return bound
            folder = folder.parent

    def _server(self, spec: ServerSpec, command: str, root: Path) -> LanguageServer | Unavailable:
        key = (spec.name, root)
        with self._lock:
            if self._closed:
                return Unavailable(spec.language, "the toolbox is closing")
            entry = self._entries.get(key)
            if entry is not None and _usable(entry.server):
                return entry.server
            if entry is not None:  # it died, or never started: restart once
                self._count_failure(key, entry)
                now = time.monotonic()
                recent = [t for t in self._failures.get(key, []) if now - t < _RESTART_WINDOW]
                if len(recent) >= 2:
                    return Unavailable(
                        spec.language,
                        f"{spec.name} stopped twice within {_RESTART_WINDOW:g} s and is not "
                        f"restarted: {_reason(entry.server)}",
                    )
                del self._entries[key]
            spec = pin_tsserver(spec, command)
            try:
                launched = self._launch(spec, root, command)
            except OSError as exc:
                return Unavailable(spec.language, f"{spec.name} cannot be confined: {exc}")
            server = LanguageServer(
                spec, root, launched.argv, launched.env, max_open=self.settings.max_open_documents,
                on_exit=self._exited, pass_fds=launched.pass_fds,
                parent_pid=None if launched.own_pids else os.getpid(),
            )  # fmt: skip
            self._entries[key] = _Entry(server, launched.cleanup)
        if entry is not None:  # outside the lock: stopping it may take a second
            self._stop(entry)
        threading.Thread(
            target=self._start, args=(key, server), name=f"lsp-run-{spec.name}", daemon=True
        ).start()
        return server

    def _start(self, key: tuple[str, Path], server: LanguageServer) -> None:
        """The server's thread, from its start to its end: a failed start counts as a
        failure; a start that the manager's close overtook leaves no process behind."""
        if server.closed:
            return
        try:
            server.start(self.settings.start_timeout)
        except Exception:  # a start racing close may find its future already settled
            log.debug("starting %s raced its stop", server.name, exc_info=True)
        with self._lock:
            entry = self._entries.get(key)
            current = entry is not None and entry.server is server
            if current and entry is not None and server.ready.exception() is not None:
                self._count_failure(key, entry)
        if server.closed or not current:
            _release(server)
        elif server._proc is not None:
            # This thread spawned the server, so it lives as long as the server does:
            # bwrap's --die-with-parent (PR_SET_PDEATHSIG) kills the sandbox when the
            # spawning *thread* ends, not the process.
            server._proc.wait()

    def _count_failure(self, key: tuple[str, Path], entry: _Entry) -> None:
        """Counted once per server (lock held): by its exit, a failed start or a caller."""
        if entry.failed_at is None:
            entry.failed_at = time.monotonic()
            self._failures.setdefault(key, []).append(entry.failed_at)

    def _exited(self, server: LanguageServer) -> None:
        key = (server.spec.name, server.root)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.server is server:
                self._count_failure(key, entry)
        log.warning("language server %s exited: %s", server.name, server.exit_reason)

    def running(self) -> list[LanguageServer]:
        with self._lock:
            return [e.server for e in self._entries.values() if e.server.alive]

    # --- life --------------------------------------------------------------------

    def _reap(self) -> None:
        while not self._wake.wait(self._poll):
            now = time.monotonic()
            with self._lock:
                idle = [
                    (k, e) for k, e in self._entries.items()
                    if e.server.alive and now - e.server.last_used > self.settings.idle_timeout
                ]  # fmt: skip
                for key, _ in idle:
                    del self._entries[key]
            for _, entry in idle:
                self._stop(entry)

    def _stop(self, entry: _Entry) -> None:
        try:
            entry.server.close()
        except Exception:  # one failing must not leave the others running
            log.exception("stopping %s failed", entry.server.name)
        _release(entry.server)
        if entry.cleanup is not None:
            try:
                entry.cleanup()
            except Exception:
                log.exception("cleaning up after %s failed", entry.server.name)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            entries = list(self._entries.values())
            self._entries.clear()
        self._wake.set()
        for entry in entries:
            self._stop(entry)
        if self._reaper is not threading.current_thread():
            self._reaper.join(5)


def _close_quietly(streams: list[IO[bytes]]) -> None:
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def _usable(server: LanguageServer) -> bool:
    if server.closed:
        return False
    return server.alive or not server.ready.done()


def _reason(server: LanguageServer) -> str:
    failed = server.ready.exception() if server.ready.done() else None
    if failed is not None:
        return str(failed)
    proc = server._proc
    if proc is not None:  # its output ended: the exit (and its status) is a moment away
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.2)
    reason = server.exit_reason
    code = proc.poll() if proc is not None else None
    if code is not None and "exit status" not in reason:  # the reader saw EOF first
        reason = f"{reason} (exit status {code})"
    return reason


def _release(server: LanguageServer) -> None:
    """Kill what is left of the server's process group (a start that raced close spawns
    after close looked) and close its pipes: the client's close leaves stderr to its
    drain thread, and a process spawned after close was never closed at all."""
    proc = server._proc
    if proc is None:
        return
    kill_group(proc)
    streams = [s for s in (proc.stdin, proc.stdout, proc.stderr) if s is not None]
    # In a thread: closing a pipe waits for its reader thread, which a stray holder of
    # the pipe's other end could keep waiting.
    threading.Thread(
        target=_close_quietly, args=(streams,), name="lsp-pipes-close", daemon=True
    ).start()


def plain_launch(spec: ServerSpec, root: Path, command: str) -> Launched:
    """Unconfined: the command with the host's environment (tests of the engine alone)."""
    env = dict(os.environ)
    env.update(spec.env)
    return Launched([command, *spec.args], env)
