"""Fixtures that run the knowledge tests on both backends: SQLite and a real PostgreSQL.

`pg_server` (session scope) starts a throwaway cluster with Debian's PostgreSQL
binaries: initdb into a fresh temp folder, pg_ctl start listening on a unix socket in
that folder only (no TCP port, nothing shared with a system server), one database; it
is stopped and removed at the end, whether the tests passed or not. As root the server
runs as the `postgres` user (it refuses to run as root). Where it cannot be had (no
binaries, no psycopg, no such user) the PostgreSQL half skips with the reason.

Each PostgreSQL test gets its own schema (`[knowledge] pg_schema`), dropped after it.
Test modules take them with `from knowledge_backends import *` (the fixtures by name).
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox
from local_tools.knowledge import KnowledgeStore, store_path

__all__ = [
    "backend",
    "knowledge_config",
    "make_toolbox",
    "open_store_for",
    "pg_schemas",
    "pg_server",
    "run_writers",
    "tb",
]

DB = "knowledge_test"


def _bindir() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _run_as(user: str | None, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, **kwargs)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The url of a database on a private PostgreSQL server started for this run."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("PostgreSQL half skipped: psycopg is not installed (pip install -e '.[dev]')")
    bindir = _bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL half skipped: no PostgreSQL server binaries (initdb) on this machine; "
            "`make postgres-deps` installs Debian's postgresql as root"
        )
    user: str | None = None
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("PostgreSQL half skipped: running as root and no `postgres` user")
        if shutil.which("runuser") is None:
            pytest.skip("PostgreSQL half skipped: running as root and no runuser to drop to it")
        user = "postgres"
    # /tmp itself, not pytest's tmp_path: that is private to root, and a socket path must
    # stay under ~100 bytes.
    root = Path(tempfile.mkdtemp(prefix="lt-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
    data = root / "data"
    try:
        if user is not None:
            os.chown(root, pw.pw_uid, pw.pw_gid)
        initdb = [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync"]  # fmt: skip
        # C.UTF-8 lower-cases beyond ASCII, as a real server's locale would; plain C
        # where a system lacks it.
        init = _run_as(user, [*initdb, "--locale=C.UTF-8"])
        if init.returncode != 0:
            shutil.rmtree(data, ignore_errors=True)
            init = _run_as(user, [*initdb, "--no-locale"])
        if init.returncode != 0:
            pytest.skip(f"PostgreSQL half skipped: initdb failed: {init.stderr.strip()[-500:]}")
        opts = (f"-k {root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c max_connections=50")  # fmt: skip
        start = _run_as(user, [str(bindir / "pg_ctl"), "-D", str(data), "-o", opts,
                               "-l", str(root / "log"), "-w", "-t", "30", "start"])  # fmt: skip
        if start.returncode != 0:
            log = (
                (root / "log").read_text(errors="replace")[-800:] if (root / "log").exists() else ""
            )
            pytest.skip(f"PostgreSQL half skipped: the server did not start: {start.stderr} {log}")
        try:
            with psycopg.connect(
                f"postgresql://postgres@/postgres?host={root}", autocommit=True
            ) as c:
                c.execute(f"CREATE DATABASE {DB}")
            yield f"postgresql://postgres@/{DB}?host={root}"
        finally:
            _run_as(
                user, [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class _Schemas:
    """PostgreSQL schemas handed out to one test: one per workspace, as SQLite has one
    file per workspace; all dropped after the test."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.by_workspace: dict[Path, str] = {}

    def knowledge(self, workspace: Path) -> dict[str, Any]:
        schema = self.by_workspace.setdefault(workspace, f"t_{uuid.uuid4().hex[:12]}")
        return {"url": self.url, "pg_schema": schema}

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            for schema in self.by_workspace.values():
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture
def pg_schemas(backend: str, request: pytest.FixtureRequest) -> Iterator[_Schemas | None]:
    if backend == "sqlite":
        yield None
        return
    schemas = _Schemas(request.getfixturevalue("pg_server"))
    yield schemas
    schemas.drop()


@pytest.fixture
def knowledge_config(pg_schemas: _Schemas | None, workspace: Path) -> dict[str, Any]:
    """The `[knowledge]` table for `workspace` on the backend under test."""
    return pg_schemas.knowledge(workspace) if pg_schemas else {}


@pytest.fixture
def make_toolbox(workspace: Path, tmp_path: Path, pg_schemas: _Schemas | None) -> Iterator[Any]:
    made: list[Toolbox] = []

    def make(config: Any = None, **kwargs: Any) -> Toolbox:
        kwargs.setdefault("state_dir", tmp_path / "state")
        ws = kwargs.pop("workspace", workspace)
        if pg_schemas is not None:
            config = {**(config or {}), "knowledge": pg_schemas.knowledge(ws)}
        tb = Toolbox(ws, config, **kwargs)
        made.append(tb)
        return tb

    yield make
    for tb in made:
        tb.close()


@pytest.fixture
def tb(make_toolbox: Any) -> Toolbox:
    return make_toolbox()


def open_store_for(knowledge: dict[str, Any], state: Path, workspace: Path) -> KnowledgeStore:
    """A store of its own on what a toolbox with `[knowledge] = knowledge` uses."""
    if knowledge:
        from local_tools.knowledge.postgres import PostgresStore

        return PostgresStore(knowledge["url"], knowledge["pg_schema"])
    from local_tools.knowledge.sqlite import SqliteStore

    return SqliteStore(store_path(state, workspace))


def run_writers(
    script: str, knowledge: dict[str, Any], workspace: Path, state: Path, rounds: int
) -> None:
    """`script` in two processes at once (alice and bob), each with its own toolbox;
    it reads who, rounds, workspace, state and the config (JSON) from argv."""
    config = json.dumps({"knowledge": knowledge} if knowledge else {})
    procs = []
    for who in ("alice", "bob"):
        argv = [sys.executable, "-c", textwrap.dedent(script), who, str(rounds)]
        argv += [str(workspace), str(state), config]
        procs.append(subprocess.Popen(argv, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
