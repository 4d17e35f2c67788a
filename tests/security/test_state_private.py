"""Issue 20, class 6: state is private.

`pending.sqlite` was 0644 in 0755 folders: another local user read a pending review
draft. Now every folder of the state dir is 0700 and every file in it 0600 (SQLite's
-wal, -shm and -journal files included), and a state dir an older version left
readable is fixed when a server starts.

The attacker is a real other user: `nobody`, through `setpriv` (this suite runs as
root in CI; elsewhere those tests are skipped, saying why, and the modes are checked).
The state dir sits in a folder everyone may traverse, as `~/.local/state` does for a
home directory others can enter; a control file beside it shows `nobody` can read
what is not private there.
"""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox
from local_tools.core.state import private_file, tighten_state_dir
from local_tools.interact.terminal import TerminalAsker
from spawned_http import spawn_http_server

NOBODY = 65534
SECRET = "PENDING-DRAFT-CANARY"


def _can_switch_user() -> str | None:
    """Why tests cannot run a command as `nobody`, or None when they can."""
    if os.geteuid() != 0:
        return "not root: cannot run a command as another user (the modes are checked instead)"
    if shutil.which("setpriv") is None:
        return "no setpriv (util-linux) to run a command as another user"
    return None


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user may enter (not pytest's 0700 tmp), removed afterwards."""
    old = os.umask(0o022)  # the usual umask: what is not made private ends up 0644/0755
    base = Path(tempfile.mkdtemp(prefix="lt-state-private-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        os.umask(old)
        shutil.rmtree(base, ignore_errors=True)


def _everything(root: Path) -> list[Path]:
    return [root, *sorted(root.rglob("*"))]


def _loose(root: Path) -> list[str]:
    """Entries of `root` that another user could open: group or other bits."""
    out = []
    for path in _everything(root):
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        if path.is_symlink():
            continue
        if (path.is_dir() and mode != 0o700) or (not path.is_dir() and mode & 0o077):
            out.append(f"{oct(mode)} {path.relative_to(root.parent)}")
    return out


def _use_the_state(ws: Path, state: Path) -> Toolbox:
    """A toolbox that writes every kind of state: audit rows, an approval kept, todos, a
    pending review draft waiting in the queue (its connection left open: -wal, -shm)."""
    tb = Toolbox(ws, state_dir=state, asker=TerminalAsker(io.StringIO("a\n"), io.StringIO()))
    (ws / "a.txt").write_text("x")
    assert tb.run("file_delete", {"path": "a.txt"})["success"]  # "always": approvals.json
    assert tb.run("todo_write", {"todos": [{"content": "t", "status": "pending"}]})["success"]
    tb.pending.beat("console", "http://127.0.0.1:1/")
    tb.pending.submit("review", {"title": "PRD", "content": SECRET, "tool": "x"})
    assert tb.audit is not None
    tb.audit.flush()
    return tb


def test_state_made_now_is_private(shared: Path) -> None:
    ws, state = shared / "ws", shared / "state"
    ws.mkdir()
    tb = _use_the_state(ws, state)
    try:
        names = {p.name for p in state.rglob("*")}
        assert {"audit.sqlite", "pending.sqlite", "pending.sqlite-wal", "approvals.json"} <= names
        assert _loose(state) == []
    finally:
        tb.close()


def test_a_running_servers_state_is_private(shared: Path) -> None:
    ws, state = shared / "ws", shared / "state"
    ws.mkdir()
    tb = _use_the_state(ws, state)
    try:
        with spawn_http_server(ws, state):
            names = {p.name for p in state.rglob("*")}
            assert {"server-token", "servers"} <= names
            assert _loose(state) == []
    finally:
        tb.close()


def test_another_user_reads_nothing_of_the_state(shared: Path) -> None:
    why = _can_switch_user()
    if why:
        pytest.skip(why)
    ws, state = shared / "ws", shared / "state"
    ws.mkdir()
    control = shared / "control.txt"
    control.write_text("readable\n")
    tb = _use_the_state(ws, state)
    try:
        with spawn_http_server(ws, state) as server:
            # The control: nobody can read what is not private, in the same folder.
            assert _as_nobody("cat", str(control)).stdout == "readable\n"
            files = [p for p in _everything(state) if p.is_file()]
            assert any(p.name == "pending.sqlite" for p in files)
            for path in files:
                done = _as_nobody("cat", str(path))
                assert done.returncode != 0 and done.stdout == "", path
                assert SECRET not in done.stdout and server.token not in done.stdout
            for path in [p for p in _everything(state) if p.is_dir()]:
                assert _as_nobody("ls", str(path)).returncode != 0, path
            # sqlite3 as nobody, as an attacker would read the queue.
            reader = (
                "import sqlite3, sys; "
                "print(sqlite3.connect(sys.argv[1]).execute('select payload from requests')"
                ".fetchall())"
            )
            pending = next(p for p in files if p.name == "pending.sqlite")
            done = _as_nobody(os.path.realpath(shutil.which("python3") or "python3"), "-c", reader,
                              str(pending))  # fmt: skip
            assert SECRET not in done.stdout and done.returncode != 0
    finally:
        tb.close()


def _old_version_state(state: Path, ws: Path) -> sqlite3.Connection:
    """A state dir as older versions left it: folders 0755, files 0644, a pending queue
    with a draft in it, its WAL open (0644 -wal and -shm beside it)."""
    from local_tools.core.state import workspace_state_dir

    folder = workspace_state_dir(state, Path(os.path.realpath(ws)))
    folder.mkdir(parents=True, mode=0o755)
    for d in (state, state / "workspaces", folder):
        d.chmod(0o755)
    (state / "server-token").write_text("ab" * 32 + "\n")
    (folder / "approvals.json").write_text("{}\n")
    for f in (state / "server-token", folder / "approvals.json"):
        f.chmod(0o644)
    db = sqlite3.connect(folder / "pending.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(
        "CREATE TABLE requests (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
        " kind TEXT NOT NULL, created REAL NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL"
        " DEFAULT 'pending', answer TEXT, answered_by TEXT, updated REAL NOT NULL,"
        " pid INTEGER NOT NULL)"
    )
    db.execute(
        "INSERT INTO requests (id, kind, created, payload, updated, pid) "
        f"VALUES ('r1', 'review', 0, '{{\"content\": \"{SECRET}\"}}', 0, 1)"
    )
    for name in ("pending.sqlite", "pending.sqlite-wal", "pending.sqlite-shm"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o644, name
    return db


def test_an_old_state_dir_is_fixed_when_a_server_starts(shared: Path) -> None:
    ws, state = shared / "ws", shared / "state"
    ws.mkdir()
    db = _old_version_state(state, ws)
    try:
        assert _loose(state) != []  # the control: it was readable
        with spawn_http_server(ws, state):
            assert _loose(state) == []
            if _can_switch_user() is None:
                for path in (p for p in _everything(state) if p.is_file()):
                    assert _as_nobody("cat", str(path)).stdout == "", path
    finally:
        db.close()


def test_an_old_state_dir_is_fixed_when_a_toolbox_starts(shared: Path) -> None:
    ws, state = shared / "ws", shared / "state"
    ws.mkdir()
    db = _old_version_state(state, ws)
    try:
        tb = Toolbox(ws, state_dir=state)
        tb.close()
        assert _loose(state) == []
    finally:
        db.close()


def test_sqlite_side_files_take_the_private_mode(shared: Path) -> None:
    """`private_file` before connecting: the -journal of a rollback-journal database and
    the -wal/-shm of a WAL one are made 0600 (SQLite copies the database's mode)."""
    journal_db = private_file(shared / "state" / "j.sqlite")
    db = sqlite3.connect(journal_db, isolation_level=None)
    db.execute("CREATE TABLE t (x)")
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO t VALUES (1)")
    journal = shared / "state" / "j.sqlite-journal"
    assert journal.exists() and stat.S_IMODE(journal.stat().st_mode) == 0o600
    db.execute("COMMIT")
    db.close()
    wal_db = private_file(shared / "state" / "w.sqlite")
    db = sqlite3.connect(wal_db, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE t (x)")
    for name in ("w.sqlite", "w.sqlite-wal", "w.sqlite-shm"):
        assert stat.S_IMODE((shared / "state" / name).stat().st_mode) == 0o600, name
    db.close()
    assert stat.S_IMODE((shared / "state").stat().st_mode) == 0o700
    # The control: without it, SQLite makes the database 0644 under this umask.
    plain = sqlite3.connect(shared / "plain.sqlite")
    plain.execute("CREATE TABLE t (x)")
    plain.close()
    assert stat.S_IMODE((shared / "plain.sqlite").stat().st_mode) == 0o644


def test_tightening_follows_no_symlink(shared: Path) -> None:
    state = shared / "state"
    state.mkdir(mode=0o755)
    outside = shared / "outside.txt"
    outside.write_text("x")
    outside.chmod(0o644)
    (state / "link").symlink_to(outside)
    (shared / "outdir").mkdir(mode=0o755)
    (state / "dirlink").symlink_to(shared / "outdir")
    tighten_state_dir(state)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert stat.S_IMODE((shared / "outdir").stat().st_mode) == 0o755
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
