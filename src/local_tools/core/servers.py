"""Which ports local-tools' own servers of a state dir listen on.

`serve http` and `serve mcp --transport http` record themselves in
`<state>/servers/<pid>-<port>.json` once their socket is bound and remove the record when
they stop. The web tools and the browser read the records at connect time and never
connect to those ports on this machine (`security/net.py`): the model must not reach
the servers that hold its approvals, whatever `[network] allow_private` says.

A record whose process is gone (a crash, SIGKILL) is ignored and removed when read. A
reused pid keeps a dead server's port refused until that process ends: refusing one
port too many is the safe side. `reserved_ports` adds, for the web tools, the servers of
the default state dir (a Toolbox given another state dir still must not reach the
person's console) and the servers' default ports (an older local-tools that records
nothing, a server of yet another state dir).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from local_tools.core.state import write_state_file

__all__ = [
    "DEFAULT_PORTS",
    "ServerRecord",
    "listening_ports",
    "register_server",
    "registered_server",
    "reserved_ports",
    "servers",
    "unregister_server",
]

_DIR = "servers"
DEFAULT_PORTS = frozenset({39527, 39528})  # serve http, serve mcp --transport http


@dataclass(frozen=True)
class ServerRecord:
    kind: str  # "http" (serve http) or "mcp" (serve mcp --transport http)
    host: str  # the bound address
    port: int
    pid: int
    path: Path  # the record's file


def register_server(state_dir: Path, kind: str, host: str, port: int) -> ServerRecord:
    """Record this process's server listening on `host`:`port` (mode 0600)."""
    pid = os.getpid()
    path = Path(state_dir) / _DIR / f"{pid}-{port}.json"
    data = {"kind": kind, "host": host, "port": port, "pid": pid, "started": time.time()}
    write_state_file(path, json.dumps(data) + "\n")
    return ServerRecord(kind, host, port, pid, path)


def unregister_server(record: ServerRecord) -> None:
    with contextlib.suppress(OSError):
        record.path.unlink()


@contextlib.contextmanager
def registered_server(state_dir: Path, kind: str, host: str, port: int) -> Iterator[ServerRecord]:
    """The record for as long as the block runs (the server's lifetime)."""
    record = register_server(state_dir, kind, host, port)
    try:
        yield record
    finally:
        unregister_server(record)


def servers(state_dir: Path) -> list[ServerRecord]:
    """The live servers of `state_dir`; records of dead processes are removed."""
    folder = Path(state_dir) / _DIR
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = folder / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            record = ServerRecord(
                str(data["kind"]), str(data["host"]), int(data["port"]), int(data["pid"]), path
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # half-written or foreign: not a record
        if _alive(record.pid):
            found.append(record)
        else:
            unregister_server(record)
    return found


def listening_ports(state_dir: Path) -> frozenset[int]:
    """The ports local-tools' servers of `state_dir` listen on now."""
    return frozenset(r.port for r in servers(state_dir))


def reserved_ports(state_dir: Path) -> frozenset[int]:
    """The ports no web tool may reach on this machine: the servers of `state_dir` and
    of the default state dir, and the servers' default ports."""
    from local_tools.core.state import default_state_dir

    ports = listening_ports(state_dir) | DEFAULT_PORTS
    default = default_state_dir()
    if os.path.abspath(default) != os.path.abspath(state_dir):
        ports |= listening_ports(default)
    return ports


def _alive(pid: int) -> bool:
    # psutil, not os.kill(pid, 0): on Windows that would end the process.
    return pid == os.getpid() or psutil.pid_exists(pid)
