"""The call log: every tool call, with secrets redacted, in SQLite.

``AuditLog.record`` is on the hot path of every call, so it only appends the record
to an in-memory buffer. Redaction, JSON encoding and the SQLite write happen later,
in batches: when the buffer reaches ``flush_every`` records (by the caller that
filled it), every ``flush_interval`` seconds (a background thread), on ``flush()``/``query()``, on
``close()``, when the log is garbage-collected and at interpreter exit. A failed
write (disk full, read-only dir, locked db) is logged as a warning and the batch is
dropped: auditing must never break a tool call. A record SQLite rejects (a lone
surrogate such as ``"bad\\udcff.txt"``, the name os.scandir gives a non-UTF-8 file
name) costs no other record: its batch is retried row by row, and that record is
stored with what UTF-8 cannot encode written as a backslash escape (the text
``bad\\udcff.txt``, which reads back as such).

Durability: ``close()`` (``Toolbox.close``, interpreter exit) writes every record
recorded before it. A crash (``kill -9``, a segfault) loses what the buffer held:
fewer than ``flush_every`` records (64 by default), from about the last
``flush_interval`` seconds (0.5) — more only while a write waits for another
process's lock and other threads keep recording, never more than ``MAX_PENDING``.
Committed batches survive a crash of the process (WAL, ``synchronous=NORMAL``); a
power loss may also lose the last committed ones.

Each record is also emitted on the stdlib logger ``local_tools.audit`` at INFO, with
the redacted record in ``extra={"audit": {...}}``, only when that logger is enabled.

The schema and its migrations live in ``audit_schema``, the repair of rows SQLite
rejects in ``audit_rows``, the redaction rules in ``redact``.
Several processes may share the database (WAL journal, busy timeout).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# _sanitized is looked up here by _insert_each, so tests can patch audit._sanitized.
from local_tools.core.audit_rows import _ROW_ERRORS, _sanitized, _text
from local_tools.core.audit_schema import migrate
from local_tools.core.redact import redact_clipped
from local_tools.core.state import private_file

__all__ = ["AuditLog", "AuditRecord"]

# The stream of audit records, for users who want them in their own logging setup.
audit_logger = logging.getLogger("local_tools.audit")
# Diagnostics about the log itself (write failures), kept apart from the record stream.
_log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 5.0  # other processes may hold the write lock briefly
MAX_ROWS_PER_COMMIT = 1000
MAX_PENDING = 100_000  # records buffered before new ones are dropped (db stuck)
MAX_ARG_CHARS = 4096  # longer string args (file contents) are clipped in the db
MAX_ARGS_TOTAL = 64 * 1024  # about what one record keeps of all its args
# The log keeps the newest calls within this size: a model looping on calls with big
# arguments must not fill the disk (deleted rows' pages are reused, so the file stops
# growing there).
MAX_LOG_BYTES = 256 * 1024 * 1024
_PRUNE_EVERY = 500  # rows written between size checks
_JOIN_TIMEOUT_S = 10.0


@dataclass
class AuditRecord:
    ts: float
    call_id: str
    user_id: str
    tool: str
    args: dict[str, Any]
    outcome: Literal["success", "error"]
    error_code: str | None
    duration_ms: float
    workspace: str = ""
    transport: str = ""
    # How the call ended when the code alone does not say: set by the runner (never
    # from arguments or tool output) for a call something outside the tool ended.
    note: str | None = None


# --------------------------------------------------------------------------- the log

_COLUMNS = (
    "ts, call_id, user_id, tool, args, outcome, error_code, duration_ms, workspace, transport, note"
)
_INSERT = f"INSERT INTO calls ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


# Built once: json.dumps with options constructs a new encoder on every call.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def _row(rec: AuditRecord) -> tuple[Any, ...]:
    try:
        args = _encode(redact_clipped(rec.args, MAX_ARG_CHARS, MAX_ARGS_TOTAL))
    except Exception as exc:  # circular args, an object whose str() raises...
        args = _encode({"_unencodable": f"{type(exc).__name__}: {exc}"})
    return (
        rec.ts,
        rec.call_id,
        rec.user_id,
        rec.tool,
        args,
        rec.outcome,
        rec.error_code,
        rec.duration_ms,
        rec.workspace,
        rec.transport,
        rec.note,
    )


def _insert_each(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> list[BaseException]:
    """Insert row by row, each as is or else sanitized; the errors of dropped rows."""
    errors: list[BaseException] = []
    for row in rows:
        try:
            conn.execute(_INSERT, row)
        except _ROW_ERRORS:
            try:
                conn.execute(_INSERT, _sanitized(row))
            except _ROW_ERRORS as exc:
                errors.append(exc)
    return errors


class _Store:
    """The buffer and the database. Separate from ``AuditLog`` so the background
    thread and the exit/GC finalizer can hold it without keeping the log alive."""

    def __init__(self, path: Path, flush_every: int) -> None:
        self.path = path
        self.flush_every = flush_every
        self.buf: list[AuditRecord] = []
        self.buf_lock = threading.Lock()
        # Serializes every use of the connection; also keeps batches in order.
        self.db_lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.closed = False
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.dropped = 0
        self._written = _PRUNE_EVERY  # rows since the last size check: check at once

    def connect(self) -> sqlite3.Connection:
        """The open connection, opening and migrating it first if needed (db_lock held)."""
        if self.conn is not None:
            return self.conn
        # Created 0600 up front in a 0700 folder (its -wal and -shm copy the mode): args
        # are redacted, but still nobody else's business.
        private_file(self.path)
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # With WAL, NORMAL survives application crashes; only power loss can drop
            # the last batches — a fair trade for a log written on every call.
            conn.execute("PRAGMA synchronous=NORMAL")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        return conn

    def disconnect(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def flush(self) -> None:
        """Write the buffer. Never raises."""
        with self.db_lock:
            with self.buf_lock:
                batch, self.buf = self.buf, []
            if batch:
                self._write(batch)

    def _write(self, batch: list[AuditRecord]) -> None:
        done = 0  # records written or given up on
        row_errors: list[BaseException] = []
        try:
            conn = self.connect()
            # Bounded transactions: big enough to amortize the commit (most of the
            # cost with four indexes), short enough not to hold other processes off.
            for start in range(0, len(batch), MAX_ROWS_PER_COMMIT):
                rows = [_row(rec) for rec in batch[start : start + MAX_ROWS_PER_COMMIT]]
                conn.execute("BEGIN IMMEDIATE")
                try:
                    try:
                        conn.executemany(_INSERT, rows)
                    except _ROW_ERRORS:
                        # One bad row must not cost the others: start over row by
                        # row, sanitizing the rows SQLite rejects (rare, so the
                        # common case pays nothing for it).
                        conn.execute("ROLLBACK")
                        conn.execute("BEGIN IMMEDIATE")
                        row_errors += _insert_each(conn, rows)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                done += len(rows)
            self._written += done
            if self._written >= _PRUNE_EVERY:
                self._written = 0
                _prune(conn)
        except Exception as exc:
            # Reopen next time: the file may have been replaced or the disk freed.
            self.disconnect()
            self.failed(exc, len(batch) - done + len(row_errors))
        else:
            if row_errors:
                self.failed(row_errors[-1], len(row_errors))
            else:
                self.last_error = None

    def failed(self, exc: BaseException, count: int) -> None:
        self.dropped += count
        message = f"{type(exc).__name__}: {exc}"
        # One warning per distinct failure, not one every flush interval.
        level = logging.DEBUG if message == self.last_error else logging.WARNING
        self.last_error = message
        if count:
            _log.log(level, "audit log %s: dropped %d record(s): %s", self.path, count, message)
        else:
            _log.log(
                level,
                "audit log %s cannot be opened; records are dropped until it can: %s",
                self.path,
                message,
            )

    def close(self) -> None:
        """Stop the thread, write what is left, close the db. Idempotent; never raises."""
        thread = self.thread
        if thread is threading.current_thread():
            # The log was garbage-collected on the flusher thread, maybe while it holds
            # a lock: taking one here could deadlock, so let the loop finish the job.
            self.closed = True
            self.wake.set()
            return
        with self.buf_lock:
            self.closed = True
        self.wake.set()
        if thread is not None:
            thread.join(_JOIN_TIMEOUT_S)
        self.flush()
        with self.db_lock:
            self.disconnect()


def _prune(conn: sqlite3.Connection) -> None:
    """Delete the oldest calls while the log is over MAX_LOG_BYTES (down to 80%)."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    used = (pages - free) * size
    if used <= MAX_LOG_BYTES:
        return
    rows = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
    drop = max(1, int(rows * (1 - 0.8 * MAX_LOG_BYTES / used)))
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "DELETE FROM calls WHERE rowid IN (SELECT rowid FROM calls ORDER BY ts LIMIT ?)",
            (drop,),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _flush_loop(store: _Store, interval: float) -> None:
    while True:
        store.wake.wait(interval)
        store.wake.clear()
        store.flush()
        if store.closed:
            with store.db_lock:
                store.disconnect()
            return


class AuditLog:
    """Batched, thread-safe writer and reader of the SQLite call log at ``path``.

    Opening never raises: if the database cannot be created the failure is logged and
    records are dropped (retried on each flush). ``record`` takes ownership of the
    record: do not mutate ``rec.args`` afterwards (it is redacted at flush time).
    """

    def __init__(self, path: Path, *, flush_every: int = 64, flush_interval: float = 0.5) -> None:
        if flush_every < 1:
            raise ValueError("flush_every must be at least 1")
        self.path = Path(path)
        self._store = store = _Store(self.path, flush_every)
        with store.db_lock:
            try:
                store.connect()  # early, so migrations and path problems show at startup
            except Exception as exc:
                store.disconnect()
                store.failed(exc, 0)
        if flush_interval > 0:
            store.thread = threading.Thread(
                target=_flush_loop,
                args=(store, flush_interval),
                name=f"local-tools-audit:{self.path.name}",
                daemon=True,
            )
            store.thread.start()
        # Runs on close(), when this object is collected, and at interpreter exit;
        # it references only the store, so it does not keep the log alive.
        self._finalizer = weakref.finalize(self, store.close)

    def record(self, rec: AuditRecord) -> None:
        """Queue ``rec`` for writing. Cheap; never raises."""
        if audit_logger.isEnabledFor(logging.INFO):
            self._emit(rec)
        store = self._store
        with store.buf_lock:
            pending = len(store.buf)
            accepted = not store.closed and pending < MAX_PENDING
            if accepted:
                store.buf.append(rec)
                pending += 1
        if not accepted:
            if store.closed:
                store.dropped += 1
            else:  # the writer cannot keep up (db locked for long): say so, once
                store.failed(OverflowError(f"more than {MAX_PENDING} records pending"), 1)
            return
        if pending >= store.flush_every:
            # A full batch is written by the caller, inline: handing it to the thread
            # costs more (GIL hand-offs) than the write itself, and a thread that falls
            # behind a busy caller would let records pile up. The thread only writes
            # what a quiet period leaves in the buffer.
            store.flush()

    def _emit(self, rec: AuditRecord) -> None:
        try:
            data = {
                "ts": rec.ts,
                "call_id": rec.call_id,
                "user_id": rec.user_id,
                "tool": rec.tool,
                "args": redact_clipped(rec.args, MAX_ARG_CHARS, MAX_ARGS_TOTAL),
                "outcome": rec.outcome,
                "error_code": rec.error_code,
                "duration_ms": rec.duration_ms,
                "workspace": rec.workspace,
                "transport": rec.transport,
                "note": rec.note,
            }
            code = f" error_code={rec.error_code}" if rec.error_code else ""
            if rec.note:
                code += f" ({rec.note})"
            audit_logger.info(
                "tool=%s user=%s outcome=%s%s ms=%.1f",
                rec.tool,
                rec.user_id,
                rec.outcome,
                code,
                rec.duration_ms,
                extra={"audit": data},
            )
        except Exception:  # a broken args object must not break the call
            _log.debug("could not emit audit record", exc_info=True)

    def flush(self) -> None:
        """Write buffered records now. Never raises (failures are logged)."""
        self._store.flush()

    def close(self) -> None:
        """Flush and close. Later ``record`` calls are dropped. Idempotent."""
        self._finalizer()

    @property
    def dropped(self) -> int:
        """How many records could not be written (failed writes, closed, overflow)."""
        return self._store.dropped

    def query(
        self,
        *,
        tool: str | None = None,
        user: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        limit: int = 50,
    ) -> list[AuditRecord]:
        """Records matching every given filter, newest first (flushes first).

        ``since`` is a Unix timestamp (inclusive). Raises ``sqlite3.Error`` or
        ``OSError`` if the database cannot be read, and ``RuntimeError`` once closed.
        """
        store = self._store
        if store.closed:
            raise RuntimeError("the audit log is closed")
        store.flush()
        where: list[str] = []
        params: list[str | float | int] = []
        for column, value in (("tool", tool), ("user_id", user), ("outcome", outcome)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(_text(value))  # as a value with surrogates was stored
        if since is not None:
            where.append("ts >= ?")
            params.append(since)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT {_COLUMNS} FROM calls{clause} ORDER BY id DESC LIMIT ?"
        params.append(max(0, limit))
        with store.db_lock:
            rows = store.connect().execute(sql, params).fetchall()
        return [
            AuditRecord(
                ts=r[0],
                call_id=r[1],
                user_id=r[2],
                tool=r[3],
                args=json.loads(r[4]),
                outcome=r[5],
                error_code=r[6],
                duration_ms=r[7],
                workspace=r[8],
                transport=r[9],
                note=r[10],
            )
            for r in rows
        ]

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
