"""The toolbox's language servers: one per (server, project root), started on first need.

A file goes to the first configured or built-in server that claims its extension and is
installed (specs.py); the server is rooted at the nearest folder holding one of its
root markers, never above the workspace root that holds the file. It starts in a thread
of its own so no call waits longer than it chose to; a server that dies is restarted
once (a second crash within five minutes leaves it unavailable, with its last output);
servers idle past `[lsp] idle_timeout` are stopped, and all of them with the toolbox.

Servers run confined like commands (security/sandbox.py): the file system read-only, a
private TMPDIR, no network, the state folder and credential stores hidden. Without
seccomp's Unix-socket filter: node-based servers talk to their own workers over
socketpairs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from local_tools.lsp.client import LanguageServer
from local_tools.lsp.specs import ServerSpec, find_command, server_specs, specs_for

__all__ = ["Launch", "Launched", "LspManager", "LspSettings", "Unavailable"]

log = logging.getLogger(__name__)

_RESTART_WINDOW = 300.0  # a second crash within this many seconds is final


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


# (spec, root, resolved command) -> (argv, env, fds to pass)
Launched = tuple[list[str], dict[str, str], tuple[int, ...]]
Launch = Callable[[ServerSpec, Path, str], Launched]


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
        self._servers: dict[tuple[str, Path], LanguageServer] = {}
        self._crashes: dict[tuple[str, Path], list[float]] = {}
        self._closed = False
        self._reaper = threading.Thread(target=self._reap, name="lsp-reaper", daemon=True)
        self._wake = threading.Event()
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
            server = self._servers.get(key)
            if server is not None and (server.alive or not server.ready.done()):
                return server
            if server is not None:  # it died: restart once
                crashes = [
                    t for t in self._crashes.get(key, []) if time.monotonic() - t < _RESTART_WINDOW
                ]
                if len(crashes) >= 2:
                    return Unavailable(
                        spec.language,
                        f"{spec.name} stopped twice within {_RESTART_WINDOW:g} s and is not "
                        f"restarted: {server.exit_reason}",
                    )
            try:
                argv, env, fds = self._launch(spec, root, command)
            except OSError as exc:
                return Unavailable(spec.language, f"{spec.name} cannot be confined: {exc}")
            server = LanguageServer(
                spec, root, argv, env, max_open=self.settings.max_open_documents,
                on_exit=self._exited, pass_fds=fds,
            )  # fmt: skip
            self._servers[key] = server
        threading.Thread(
            target=server.start, args=(self.settings.start_timeout,), name=f"lsp-start-{spec.name}",
            daemon=True,
        ).start()  # fmt: skip
        return server

    def _exited(self, server: LanguageServer) -> None:
        key = (server.spec.name, server.root)
        with self._lock:
            self._crashes.setdefault(key, []).append(time.monotonic())
        log.warning("language server %s exited: %s", server.name, server.exit_reason)

    def running(self) -> list[LanguageServer]:
        with self._lock:
            return [s for s in self._servers.values() if s.alive]

    # --- life --------------------------------------------------------------------

    def _reap(self) -> None:
        while not self._wake.wait(min(30.0, self.settings.idle_timeout)):
            now = time.monotonic()
            with self._lock:
                idle = [
                    (k, s) for k, s in self._servers.items()
                    if s.alive and now - s.last_used > self.settings.idle_timeout
                ]  # fmt: skip
                for key, _ in idle:
                    del self._servers[key]
            for _, server in idle:
                server.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            servers = list(self._servers.values())
            self._servers.clear()
        self._wake.set()
        for server in servers:
            try:
                server.close()
            except Exception:  # one failing must not leave the others running
                log.exception("stopping %s failed", server.name)


def plain_launch(
    spec: ServerSpec, root: Path, command: str
) -> tuple[list[str], dict[str, str], tuple[int, ...]]:
    """Unconfined: the command with the host's environment (tests of the engine alone)."""
    env = dict(os.environ)
    env.update(spec.env)
    return [command, *spec.args], env, ()
