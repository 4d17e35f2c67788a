"""The knowledge store: what memory.py, project.py and transfer.py ask of a database.

Two backends implement it: `sqlite.SqliteStore` (the default: one file per workspace
in the workspace's state folder) and `postgres.PostgresStore` (`[knowledge] url =
"postgresql://..."`: one database a team shares). The engines write portable SQL with
`?` placeholders; each backend owns its schema, its transactions and its full-text
search, so no engine module branches on the backend.

Every write is one transaction that holds the store's single writer lock (SQLite's
`BEGIN IMMEDIATE`, a PostgreSQL advisory lock): writers in two processes queue, and
a read-check-write such as a task status move never loses an update.
"""

from __future__ import annotations

import abc
import contextlib
import difflib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from local_tools.core.state import workspace_state_dir

__all__ = [
    "BUSY_TIMEOUT_MS",
    "KNOWLEDGE_FILE",
    "Conn",
    "Cursor",
    "Group",
    "KnowledgeStore",
    "close_words",
    "now_iso",
    "open_store",
    "store_path",
]

KNOWLEDGE_FILE = "knowledge.sqlite"
BUSY_TIMEOUT_MS = 10_000
T = TypeVar("T")


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection inside a transaction: `?` placeholders; rows index by position and
    by column name (sqlite3.Row or postgres.Row)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def executemany(self, sql: str, params: Any, /) -> Any: ...


# A keyword as a backend searches it (an FTS5 or a tsquery expression).
Group = str
MAX_NEAR = 3


class KnowledgeStore(abc.ABC):
    """One knowledge database, safe to share between a toolbox's threads."""

    backend: str  # "sqlite" | "postgresql"
    errors: tuple[type[Exception], ...]  # the driver's errors (a bad row in an import)

    @abc.abstractmethod
    def write(self) -> contextlib.AbstractContextManager[Conn]:
        """One write transaction: all of it or none of it, serialised across processes.
        Storage failures raise StorageError; the body's own errors roll it back."""

    @abc.abstractmethod
    def read(self, func: Callable[[Conn], T]) -> T:
        """Run `func` on a consistent snapshot."""

    @abc.abstractmethod
    def close(self) -> None: ...

    @property
    def version(self) -> int:
        row = self.read(
            lambda c: c.execute("SELECT max(version) FROM schema_migrations").fetchone()
        )
        return int(row[0] or 0)

    # ---------------------------------------------------------------- search

    @abc.abstractmethod
    def words(self, keywords: str) -> list[str]:
        """The keywords as the index spells its terms (case and accents folded alike)."""

    @abc.abstractmethod
    def groups(self, conn: Conn, words: Sequence[str]) -> list[Group]:
        """Each word as the backend searches it: the indexed terms it begins, or, when
        it begins none, the indexed terms spelled like it (`close_words`)."""

    @abc.abstractmethod
    def count_upto(self, conn: Conn, group: Group, cap: int) -> int:
        """How many entries match `group`, counting no further than `cap`."""

    @abc.abstractmethod
    def search(
        self,
        conn: Conn,
        *,
        rare: Sequence[Group],
        common: Sequence[Group],
        where: str,
        params: Sequence[Any],
        order: str,
        limit: int,
        cap: int,
    ) -> list[Any]:
        """Memory rows (`m.*`) best first: those matching a `rare` keyword all ranked,
        and of those matching only `common` ones the newest `cap`, ranked after them
        within a scope. `where` filters `m` (with `params`); `order` comes first."""

    def add_terms(self, conn: Conn, texts: Sequence[str]) -> None:  # noqa: B027
        """Record the words of new entries' texts where the backend's index cannot."""

    def after_import(self, conn: Conn) -> None:  # noqa: B027 - most backends need nothing
        """Bring id generators past the ids an import wrote (SQLite's AUTOINCREMENT
        does that by itself)."""


def close_words(word: str, candidates: Sequence[str]) -> list[str]:
    """The near spellings of `word` among `candidates`: same first letter, a difflib
    ratio of at least 0.75, the best few."""
    if len(word) < 3:
        return []
    same = [c for c in candidates if c[:1] == word[:1]]
    return difflib.get_close_matches(word, same, n=MAX_NEAR, cutoff=0.75)


def store_path(state_dir: Path, workspace: Path) -> Path:
    """Where `workspace`'s SQLite knowledge database lives."""
    ws_state = workspace_state_dir(Path(state_dir), Path(os.path.realpath(workspace)))
    return ws_state / KNOWLEDGE_FILE


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def open_store(ctx: Any) -> KnowledgeStore:
    """The toolbox's store for the call (created on first use, closed with the toolbox);
    a bare store when the context has no resources (tests, scripts). PostgreSQL when
    `[knowledge] url` is set, else the workspace's SQLite file."""
    cfg = ctx.config.knowledge
    factory: Callable[[], KnowledgeStore]
    if cfg.url:
        url, schema = cfg.url, cfg.pg_schema

        def factory() -> KnowledgeStore:
            from local_tools.knowledge.postgres import PostgresStore  # psycopg only if used

            return PostgresStore(url, schema)

        key = f"knowledge:{url}#{schema}"
    else:
        path = store_path(ctx.state_dir, ctx.workspace)

        def factory() -> KnowledgeStore:
            from local_tools.knowledge.sqlite import SqliteStore

            return SqliteStore(path)

        key = f"knowledge:{path}"
    if ctx.resources is None:
        return factory()
    return ctx.resource(key, factory)  # type: ignore[no-any-return]
