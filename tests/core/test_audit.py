"""The audit log: batching, durability, failure handling, queries, logging."""

from __future__ import annotations

import gc
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools.core import audit
from local_tools.core.audit import MAX_ARG_CHARS, AuditLog, AuditRecord
from local_tools.core.audit_schema import MIGRATIONS
from local_tools.core.redact import REDACTED

R = REDACTED


def rec(**kw: Any) -> AuditRecord:
    fields: dict[str, Any] = {
        "ts": time.time(),
        "call_id": "c1",
        "user_id": "alice",
        "tool": "read_file",
        "args": {"path": "README.md"},
        "outcome": "success",
        "error_code": None,
        "duration_ms": 1.25,
    }
    fields.update(kw)
    return AuditRecord(**fields)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "nested" / "audit.sqlite"


@pytest.fixture
def open_log(db: Path) -> Iterator[Callable[..., AuditLog]]:
    logs: list[AuditLog] = []

    def make(path: Path = db, **kw: Any) -> AuditLog:
        log = AuditLog(path, **kw)
        logs.append(log)
        return log

    yield make
    for log in logs:
        log.close()


def read_all(path: Path) -> list[AuditRecord]:
    """What another process would see: a fresh AuditLog on the same file."""
    with AuditLog(path, flush_interval=0) as reader:
        return reader.query(limit=10_000)


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


# --------------------------------------------------------------------------- storage


def test_batched_until_close_then_readable_from_a_fresh_instance(
    open_log: Callable[..., AuditLog], db: Path
) -> None:
    log = open_log(flush_every=1000, flush_interval=0)
    for i in range(3):
        log.record(rec(call_id=f"c{i}", ts=1000.0 + i))
    assert read_all(db) == []  # still buffered: writes are batched
    log.close()
    got = read_all(db)
    assert [r.call_id for r in got] == ["c2", "c1", "c0"]
    assert got[0] == rec(call_id="c2", ts=1002.0)


def test_buffer_reaching_flush_every_is_written(
    open_log: Callable[..., AuditLog], db: Path
) -> None:
    log = open_log(flush_every=2, flush_interval=0)  # no thread: written inline
    log.record(rec(call_id="a"))
    assert read_all(db) == []
    log.record(rec(call_id="b"))
    assert {r.call_id for r in read_all(db)} == {"a", "b"}


def test_full_batch_is_written_inline_even_with_a_thread(
    open_log: Callable[..., AuditLog], db: Path
) -> None:
    log = open_log(flush_every=2, flush_interval=3600)  # the interval never fires
    log.record(rec(call_id="x"))
    assert read_all(db) == []
    log.record(rec(call_id="y"))
    # no waiting: the caller that filled the batch wrote it
    assert {r.call_id for r in read_all(db)} == {"x", "y"}


def test_flushed_by_interval(open_log: Callable[..., AuditLog], db: Path) -> None:
    log = open_log(flush_every=1000, flush_interval=0.05)
    log.record(rec(call_id="tick"))
    assert wait_for(lambda: [r.call_id for r in read_all(db)] == ["tick"])


def test_flush_writes_now(open_log: Callable[..., AuditLog], db: Path) -> None:
    log = open_log(flush_every=1000, flush_interval=3600)
    log.record(rec(call_id="now"))
    log.flush()
    assert [r.call_id for r in read_all(db)] == ["now"]


def test_args_are_stored_redacted(open_log: Callable[..., AuditLog], db: Path) -> None:
    log = open_log(flush_interval=0)
    log.record(rec(args={"url": "https://u:pw123@h/x", "headers": {"Cookie": "sid=zzz"}}))
    log.close()
    conn = sqlite3.connect(db)
    try:
        raw = conn.execute("SELECT args FROM calls").fetchone()[0]
    finally:
        conn.close()
    assert "pw123" not in raw
    assert "sid=zzz" not in raw
    assert json.loads(raw) == {"url": f"https://u:{R}@h/x", "headers": {"Cookie": R}}


def test_long_string_args_are_clipped(open_log: Callable[..., AuditLog], db: Path) -> None:
    content = "x" * (MAX_ARG_CHARS - 10) + " Bearer topsecret " + "y" * 100_000
    log = open_log(flush_interval=0)
    log.record(rec(tool="write_file", args={"path": "big.txt", "content": content}))
    (got,) = log.query()
    stored = got.args["content"]
    assert len(stored) < MAX_ARG_CHARS + 100
    assert stored.startswith("x" * 100)
    assert f"{len(content)} chars" in stored
    assert "topsecret" not in stored


def test_unencodable_args_do_not_lose_the_record(
    open_log: Callable[..., AuditLog],
) -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    log = open_log(flush_interval=0)
    log.record(rec(call_id="odd", args={"obj": object(), "path": Path("a/b")}))
    log.record(rec(call_id="cyc", args=cyclic))
    got = {r.call_id: r.args for r in log.query()}
    assert got["odd"]["path"] == "a/b"
    assert got["odd"]["obj"].startswith("<object object")
    assert "_unencodable" in got["cyc"]


def test_secrets_inside_string_values_are_not_stored(
    open_log: Callable[..., AuditLog], db: Path
) -> None:
    content = "OPENAI_API_KEY=sk-proj-abc123\nDEBUG=1\n"
    log = open_log(flush_interval=0)
    log.record(rec(tool="write_file", args={"path": ".env", "content": content}))
    log.close()
    conn = sqlite3.connect(db)
    try:
        raw = conn.execute("SELECT args FROM calls").fetchone()[0]
    finally:
        conn.close()
    assert "abc123" not in raw
    assert json.loads(raw)["content"] == f"OPENAI_API_KEY={R}\nDEBUG=1\n"


# --------------------------------------------------------------------------- unstorable text


def _raw_rows(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT call_id, user_id, tool, args, error_code, workspace, transport FROM calls"
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("field", "value", "stored"),
    [
        ("args", {"path": "x\ud800"}, {"path": "x\\ud800"}),
        ("user_id", "eve\udcff", "eve\\udcff"),
        ("tool", "read_file\ud800", "read_file\\ud800"),
        ("call_id", "c\udfff", "c\\udfff"),
        ("error_code", "E\udc80", "E\\udc80"),
        ("workspace", "/w/\udcff", "/w/\\udcff"),
        ("transport", "mcp\ud800", "mcp\\ud800"),
    ],
)
def test_a_lone_surrogate_costs_no_record(
    open_log: Callable[..., AuditLog],
    db: Path,
    caplog: pytest.LogCaptureFixture,
    field: str,
    value: Any,
    stored: Any,
) -> None:
    caplog.set_level(logging.WARNING, logger="local_tools.core.audit")
    log = open_log(flush_every=64, flush_interval=0)
    for i in range(40):
        log.record(rec(call_id=f"good-{i}", ts=1000.0 + i))
    bad = rec(call_id="bad", ts=2000.0, error_code="E")
    setattr(bad, field, value)
    log.record(bad)
    for i in range(40, 63):  # the 64th record fills the batch: written inline
        log.record(rec(call_id=f"good-{i}", ts=1000.0 + i))
    assert log.dropped == 0
    assert caplog.records == []
    got = read_all(db)
    assert len(got) == 64
    assert {r.call_id for r in got if r.ts < 2000} == {f"good-{i}" for i in range(63)}
    (sanitized,) = [r for r in got if r.ts == 2000.0]
    # Stored with what UTF-8 cannot encode as a backslash escape, read back as text.
    assert getattr(sanitized, field) == stored
    assert all(r.args == {"path": "README.md"} for r in got if r.ts < 2000)


def test_a_non_utf8_file_name_from_scandir_is_stored(
    open_log: Callable[..., AuditLog], db: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    try:
        (Path(os.fsdecode(bytes(folder))) / os.fsdecode(b"bad\xff.txt")).write_text("x")
    except (OSError, UnicodeError):
        pytest.skip("the file system does not take non-UTF-8 names")
    (name,) = [e.name for e in os.scandir(folder)]
    if name != "bad\udcff.txt":
        pytest.skip(f"the file system changed the name to {name!r}")
    log = open_log(flush_interval=0)
    log.record(rec(call_id="before"))
    log.record(rec(call_id="listed", tool="list_dir", args={"entries": [name]}))
    log.record(rec(call_id="after"))
    log.flush()
    assert log.dropped == 0
    got = {r.call_id: r.args for r in log.query()}
    assert got["listed"] == {"entries": ["bad\\udcff.txt"]}
    assert set(got) == {"before", "listed", "after"}


def test_stored_text_is_valid_utf8(open_log: Callable[..., AuditLog], db: Path) -> None:
    log = open_log(flush_interval=0)
    log.record(rec(user_id="u\ud800", args={"k\udcff": ["v\ud800", Path("p\udcff")]}))
    log.close()
    ((_call_id, user_id, _tool, args, *_),) = _raw_rows(db)
    assert user_id == "u\\ud800"
    assert json.loads(args) == {"k\\udcff": ["v\\ud800", "p\\udcff"]}
    user_id.encode("utf-8")  # would raise on a surrogate
    args.encode("utf-8")


def test_a_row_that_cannot_be_stored_even_sanitized_drops_only_itself(
    open_log: Callable[..., AuditLog],
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sanitized = audit._sanitized

    def unfixable(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return (None, *sanitized(row)[1:])  # ts is NOT NULL

    monkeypatch.setattr(audit, "_sanitized", unfixable)
    caplog.set_level(logging.WARNING, logger="local_tools.core.audit")
    log = open_log(flush_interval=0)
    log.record(rec(call_id="a"))
    log.record(rec(call_id="bad", user_id="\ud800"))
    log.record(rec(call_id="b"))
    log.flush()
    assert log.dropped == 1
    assert sorted(r.call_id for r in log.query()) == ["a", "b"]
    (warning,) = caplog.records
    assert "dropped 1 record(s)" in warning.getMessage()
    assert "IntegrityError" in warning.getMessage()


def test_good_batches_take_no_row_by_row_path(
    open_log: Callable[..., AuditLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: Any) -> list[BaseException]:
        raise AssertionError("row by row")

    monkeypatch.setattr(audit, "_insert_each", fail)
    log = open_log(flush_every=10, flush_interval=0)
    for i in range(25):
        log.record(rec(call_id=str(i), args={"path": f"ünïcødé-{i}.txt"}))
    log.flush()
    assert log.dropped == 0
    assert len(log.query(limit=100)) == 25


def test_query_filters_match_sanitized_values(open_log: Callable[..., AuditLog]) -> None:
    log = open_log(flush_interval=0)
    log.record(rec(call_id="s", user_id="eve\ud800", tool="t\udcff"))
    log.record(rec(call_id="n", user_id="eve"))
    assert [r.call_id for r in log.query(user="eve\ud800")] == ["s"]
    assert [r.call_id for r in log.query(tool="t\udcff")] == ["s"]
    assert [r.call_id for r in log.query(user="eve")] == ["n"]


def test_concurrent_writers_lose_nothing(open_log: Callable[..., AuditLog], db: Path) -> None:
    log = open_log(flush_every=16, flush_interval=0.01)

    def work(t: int) -> None:
        for i in range(200):
            log.record(rec(call_id=f"{t}-{i}"))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    log.close()
    ids = [r.call_id for r in read_all(db)]
    assert len(ids) == 1600
    assert len(set(ids)) == 1600


def _writer_script(db: Path, n: int, prefix: str, close: bool) -> str:
    return textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from local_tools.core.audit import AuditLog, AuditRecord
        log = AuditLog(Path({str(db)!r}), flush_every=7, flush_interval=3600)
        for i in range({n}):
            log.record(AuditRecord(time.time(), f"{prefix}{{i}}", "bob", "grep", {{}},
                                   "success", None, 0.1))
        {"log.close()" if close else "pass  # no close: the exit hook must flush"}
        """
    )


def test_another_process_can_write_the_same_db_at_once(
    open_log: Callable[..., AuditLog], db: Path
) -> None:
    log = open_log(flush_every=5, flush_interval=0.01)
    log.record(rec(call_id="warmup"))
    log.flush()  # the db exists and is migrated before the child starts
    child = subprocess.Popen([sys.executable, "-c", _writer_script(db, 300, "child-", close=True)])
    for i in range(300):
        log.record(rec(call_id=f"parent-{i}"))
    assert child.wait(timeout=60) == 0
    log.close()
    ids = {r.call_id for r in read_all(db)}
    assert len(ids) == 601
    assert sum(i.startswith("child-") for i in ids) == 300


def test_flushed_at_interpreter_exit(db: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", _writer_script(db, 3, "exit-", close=False)],
        check=True,
        timeout=60,
    )
    assert sorted(r.call_id for r in read_all(db)) == ["exit-0", "exit-1", "exit-2"]


def test_a_crash_loses_at_most_the_unwritten_buffer(db: Path) -> None:
    """The documented bound: fewer than flush_every records, the most recent ones."""
    script = _writer_script(db, 50, "crash-", close=False) + "import os; os._exit(0)\n"
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    ids = sorted((r.call_id for r in read_all(db)), key=lambda c: int(c.split("-")[1]))
    assert ids == [f"crash-{i}" for i in range(49)]  # flush_every=7: 7 batches; 1 lost


def test_background_thread_does_not_keep_the_log_alive(db: Path) -> None:
    log = AuditLog(db, flush_every=1000, flush_interval=0.01)
    log.record(rec(call_id="gc"))
    ref = weakref.ref(log)
    del log
    gc.collect()
    assert ref() is None
    assert [r.call_id for r in read_all(db)] == ["gc"]  # flushed when collected


def test_record_after_close_is_dropped_quietly(open_log: Callable[..., AuditLog], db: Path) -> None:
    log = open_log(flush_interval=0)
    log.close()
    log.close()  # idempotent
    log.record(rec(call_id="late"))
    assert log.dropped == 1
    assert read_all(db) == []
    with pytest.raises(RuntimeError, match="closed"):
        log.query()


def test_overflowing_buffer_drops_with_one_warning(
    open_log: Callable[..., AuditLog],
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(audit, "MAX_PENDING", 3)
    caplog.set_level(logging.WARNING, logger="local_tools.core.audit")
    log = open_log(flush_every=1000, flush_interval=0)
    for i in range(5):
        log.record(rec(call_id=str(i)))
    assert log.dropped == 2
    assert len(caplog.records) == 1
    assert "pending" in caplog.records[0].getMessage()
    log.close()
    assert sorted(r.call_id for r in read_all(db)) == ["0", "1", "2"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_db_file_is_private(open_log: Callable[..., AuditLog], db: Path) -> None:
    open_log(flush_interval=0)
    assert db.stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- failures


def test_unwritable_path_never_raises(
    tmp_path: Path, open_log: Callable[..., AuditLog], caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    caplog.set_level(logging.WARNING, logger="local_tools.core.audit")
    log = open_log(blocker / "audit.sqlite", flush_every=1, flush_interval=0)
    log.record(rec())
    log.flush()
    log.close()
    assert log.dropped == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings
    assert str(blocker) in warnings[0].getMessage()


def test_failing_writes_warn_once_and_never_raise(
    open_log: Callable[..., AuditLog], db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(flush_interval=0)
    with sqlite3.connect(db) as other:
        other.execute("DROP TABLE calls")  # every insert now fails
    other.close()
    caplog.set_level(logging.DEBUG, logger="local_tools.core.audit")
    for i in range(3):
        log.record(rec(call_id=str(i)))
        log.flush()
    assert log.dropped == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "no such table: calls" in warnings[0].getMessage()


# --------------------------------------------------------------------------- schema


def test_schema_wal_and_no_write_costly_indexes(
    open_log: Callable[..., AuditLog], db: Path
) -> None:
    open_log(flush_interval=0)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # every call inserts a row: secondary indexes would multiply that cost
        assert conn.execute("PRAGMA index_list(calls)").fetchall() == []
        versions = [r[0] for r in conn.execute("SELECT version FROM _migrations")]
        assert versions == [v for v, _ in MIGRATIONS]
    finally:
        conn.close()


def test_opening_twice_applies_migrations_once(open_log: Callable[..., AuditLog], db: Path) -> None:
    first = open_log(flush_interval=0)
    first.record(rec(call_id="kept"))
    first.close()
    second = open_log(flush_interval=0)  # would fail on CREATE TABLE if re-applied
    assert [r.call_id for r in second.query()] == ["kept"]
    conn = sqlite3.connect(db)
    try:
        count = conn.execute("SELECT count(*) FROM _migrations").fetchone()[0]
    finally:
        conn.close()
    assert count == len(MIGRATIONS)


# --------------------------------------------------------------------------- query


@pytest.fixture
def filled(open_log: Callable[..., AuditLog]) -> AuditLog:
    log = open_log(flush_interval=0)
    rows = [
        ("1", 100.0, "alice", "read_file", "success", None),
        ("2", 200.0, "bob", "read_file", "error", "NOT_FOUND"),
        ("3", 300.0, "alice", "grep", "success", None),
        ("4", 400.0, "alice", "read_file", "error", "PERMISSION_DENIED"),
        ("5", 500.0, "bob", "exec_cmd", "success", None),
    ]
    for call_id, ts, user, tool, outcome, code in rows:
        log.record(
            rec(call_id=call_id, ts=ts, user_id=user, tool=tool, outcome=outcome, error_code=code)
        )
    return log


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["5", "4", "3", "2", "1"]),
        ({"tool": "read_file"}, ["4", "2", "1"]),
        ({"user": "bob"}, ["5", "2"]),
        ({"outcome": "error"}, ["4", "2"]),
        ({"since": 300.0}, ["5", "4", "3"]),
        ({"limit": 2}, ["5", "4"]),
        ({"tool": "read_file", "user": "alice", "outcome": "success"}, ["1"]),
        ({"tool": "nope"}, []),
        ({"limit": 0}, []),
    ],
)
def test_query_filters_newest_first(
    filled: AuditLog, filters: dict[str, Any], expected: list[str]
) -> None:
    assert [r.call_id for r in filled.query(**filters)] == expected


def test_query_returns_full_records(filled: AuditLog) -> None:
    (got,) = filled.query(outcome="error", user="bob")
    assert got == rec(
        call_id="2",
        ts=200.0,
        user_id="bob",
        tool="read_file",
        outcome="error",
        error_code="NOT_FOUND",
    )


# --------------------------------------------------------------------------- logging


def test_records_are_emitted_on_the_audit_logger(
    open_log: Callable[..., AuditLog], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="local_tools.audit")
    log = open_log(flush_interval=0)
    log.record(rec(args={"path": "a", "token": "t0p"}, duration_ms=1.24))
    log.record(rec(outcome="error", error_code="NOT_FOUND", user_id="bob"))
    first, second = [r for r in caplog.records if r.name == "local_tools.audit"]
    assert first.levelno == logging.INFO
    assert first.getMessage() == "tool=read_file user=alice outcome=success ms=1.2"
    assert first.audit["args"] == {"path": "a", "token": R}  # type: ignore[attr-defined]
    assert first.audit["call_id"] == "c1"  # type: ignore[attr-defined]
    assert "error_code=NOT_FOUND" in second.getMessage()


def test_a_note_is_stored_and_emitted(
    open_log: Callable[..., AuditLog], db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="local_tools.audit")
    log = open_log(flush_interval=0)
    log.record(rec(outcome="error", error_code="CANCELLED", note="InputRequired: waiting"))
    log.close()
    (got,) = read_all(db)
    assert got.note == "InputRequired: waiting"
    (emitted,) = [r for r in caplog.records if r.name == "local_tools.audit"]
    assert "error_code=CANCELLED (InputRequired: waiting)" in emitted.getMessage()
    assert emitted.audit["note"] == "InputRequired: waiting"  # type: ignore[attr-defined]


def test_nothing_emitted_when_the_logger_is_off(
    open_log: Callable[..., AuditLog], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="local_tools.audit")
    open_log(flush_interval=0).record(rec())
    assert [r for r in caplog.records if r.name == "local_tools.audit"] == []
