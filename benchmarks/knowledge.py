"""query_memory and save_memory against bare SQL doing the same, in one run.

1. save throughput: `save_memory` through the whole runner (validation, the store's
   write transaction, the full-text index, the audit log off) against a bare `INSERT`
   into a table with the same index, one transaction each.
2. query latency over N entries, p50/p99 over the same random keyword pairs (drawn
   from a Zipf-like vocabulary, so some pairs hold words most entries have):
   - query_memory through the runner (terms looked up, near spellings, the capped
     counts, the ranked query, the merged-scope order, entries and context string);
   - the engine alone (`memory.query` on the store, no runner);
   - bare, full ranking: one `SELECT ... MATCH 'w1* OR w2*' ORDER BY bm25 LIMIT 10`
     (what query_memory did before, and the cost of ranking every match);
   - bare, bounded: the engine's plan written by hand on a bare connection (a capped
     count per word, then one `SELECT` ranking every match of the rarer words and
     the newest CANDIDATES of the common ones), without the word lookups, near
     spellings, scope filters, entries or context.

With `--pg-url postgresql://...` the same runs on PostgreSQL too (a schema of its own,
dropped at the end; ts_rank over the tsvector column for the bare queries).

    python benchmarks/knowledge.py [--entries 100000] [--queries 500] [--pg-url URL]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_tools import Toolbox
from local_tools.knowledge import memory
from local_tools.knowledge.memory import query
from local_tools.knowledge.sqlite import MIGRATIONS, statements
from machine import describe

# A Zipf-like vocabulary: a few words everywhere, most words rare, as in real notes.
_RNG = random.Random(1)
WORDS = sorted({"".join(_RNG.choice("abcdefghiklmnoprstuw") for _ in range(_RNG.randint(4, 9)))
                for _ in range(20_000)})  # fmt: skip
WEIGHTS = [1 / (rank + 1) for rank in range(len(WORDS))]
BM25 = "bm25(memories_fts, 4.0, 1.0, 2.0)"
PG_SCHEMA = "kbench"


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, WEIGHTS, k=n))


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def _timed(func: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    func()
    return (time.perf_counter() - t0) * 1000


def _saves(tb: Toolbox, texts: list[str]) -> float:
    t0 = time.perf_counter()
    for text in texts:
        env = tb.run("save_memory", {"kind": "insight", "content": text, "tags": ["bench"]})
        assert env["success"], env
    return len(texts) / (time.perf_counter() - t0)


def _latencies(
    tb: Toolbox, store: Any, queries: list[str], bare: dict[str, Callable[[list[str]], Any]]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"query_memory": [], "engine (memory.query)": []}
    out.update({name: [] for name in bare})
    for q in queries:
        t0 = time.perf_counter()
        env = tb.run("query_memory", {"keywords": q, "limit": 10})
        out["query_memory"].append((time.perf_counter() - t0) * 1000)
        assert env["success"], env
        out["engine (memory.query)"].append(_timed(partial(query, store, keywords=q, limit=10)))
        for name, func in bare.items():
            out[name].append(_timed(partial(func, q.split())))
    return out


def _store(tb: Toolbox) -> Any:
    """The toolbox's own knowledge store (one connection, as query_memory uses)."""
    items = tb.runner.resources._items
    return next(v for k, v in items.items() if k.startswith("knowledge:"))


def _table(title: str, rates: tuple[float, float], lat: dict[str, list[float]]) -> None:
    print(f"\n{title}: save_memory {rates[0]:,.0f}/s, bare INSERT {rates[1]:,.0f}/s")
    print("| | p50 ms | p99 ms |\n|---|---|---|")
    for name, values in lat.items():
        print(f"| {name} | {statistics.median(values):.2f} | {_pct(values, 99):.2f} |")


def bench_sqlite(opts: argparse.Namespace, tmp: Path, texts: list[str], rows: list[str],
                 queries: list[str]) -> None:  # fmt: skip
    tb = Toolbox(tmp / "ws", state_dir=tmp / "state", audit=False, plugins=False)
    bare = sqlite3.connect(tmp / "bare.sqlite", isolation_level=None)
    bare.execute("PRAGMA journal_mode = WAL")
    for statement in statements(MIGRATIONS[0]):
        bare.execute(statement)
    tool_rate = _saves(tb, texts)
    t0 = time.perf_counter()
    for text in texts:
        bare.execute("BEGIN IMMEDIATE")
        bare.execute(
            "INSERT INTO memories(kind, content, tags, scope, user_id, tool, created_at, "
            "updated_at) VALUES ('insight', ?, 'bench', 'project', 'u', 't', '', '')",
            (text,),
        )
        bare.execute("COMMIT")
    bare_rate = len(texts) / (time.perf_counter() - t0)

    # Fill both to N entries in bulk (the same rows); the store's word table as its
    # migration fills it.
    db = next((tmp / "state").rglob("knowledge.sqlite"))
    for conn in (sqlite3.connect(db, isolation_level=None), bare):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO memories(kind, content, tags, scope, user_id, tool, created_at, "
            "updated_at) VALUES ('learning', ?, '', 'project', 'u', 't', '', '')",
            [(r,) for r in rows],
        )
        if conn is not bare:
            conn.execute("INSERT OR IGNORE INTO memory_terms SELECT term FROM memories_vocab")
        conn.execute("COMMIT")

    def full(words: list[str]) -> Any:
        match = " OR ".join(f'"{w}"*' for w in words)
        return bare.execute(
            "SELECT m.* FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? ORDER BY {BM25} LIMIT 10",
            (match,),
        ).fetchall()

    def bounded(words: list[str]) -> Any:
        # What query_memory's engine runs, by hand: a capped count per word, then the
        # rarer words' matches all ranked and the common ones' newest CANDIDATES.
        cap = memory.CANDIDATES
        rare, common = [], []
        for w in words:
            n = bare.execute(
                "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts "
                "MATCH ? LIMIT ?)",
                (f'"{w}"', cap + 1),
            ).fetchone()[0]
            (common if n > cap else rare).append(f'"{w}"')
        parts, args = [], []
        if rare:
            parts.append(f"SELECT rowid AS id, 0 AS tier, {BM25} AS s FROM memories_fts "
                         "WHERE memories_fts MATCH ?")  # fmt: skip
            args.append(" OR ".join(rare))
        if common:
            parts.append(f"SELECT * FROM (SELECT rowid AS id, 1 AS tier, {BM25} AS s "
                         "FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC "
                         "LIMIT ?)")  # fmt: skip
            args += [" OR ".join(common), cap]
        return bare.execute(
            f"WITH h AS MATERIALIZED ({' UNION ALL '.join(parts)}) SELECT m.*, min(h.tier) AS t, "
            "h.s AS s FROM h JOIN memories m ON m.id = h.id GROUP BY m.id ORDER BY t, s "
            "LIMIT 10",
            args,
        ).fetchall()

    store = _store(tb)
    lat = _latencies(tb, store, queries, {"bare FTS5, full ranking": full,
                                          "bare FTS5, bounded": bounded})  # fmt: skip
    tb.close()
    _table(f"SQLite, {opts.entries:,} entries", (tool_rate, bare_rate), lat)


def bench_postgres(opts: argparse.Namespace, tmp: Path, texts: list[str], rows: list[str],
                   queries: list[str]) -> None:  # fmt: skip
    import psycopg

    config = {"knowledge": {"url": opts.pg_url, "pg_schema": PG_SCHEMA}}
    with psycopg.connect(opts.pg_url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE")
    tb = Toolbox(tmp / "ws", config, state_dir=tmp / "state", audit=False, plugins=False)
    bare = psycopg.connect(opts.pg_url, autocommit=True)
    bare.execute(f"SET search_path = {PG_SCHEMA}, public")
    try:
        tool_rate = _saves(tb, texts)
        t0 = time.perf_counter()
        for text in texts:  # into the same table: the tool's rows are a few of N anyway
            with bare.transaction():
                bare.execute(
                    "INSERT INTO memories(kind, content, tags, scope, user_id, tool, created_at, "
                    "updated_at) VALUES ('insight', %s, 'bench', 'project', 'u', 't', '', '')",
                    (text,),
                )
        bare_rate = len(texts) / (time.perf_counter() - t0)
        with bare.cursor().copy(
            "COPY memories(kind, content, tags, scope, user_id, tool, created_at, updated_at) "
            "FROM STDIN"
        ) as copy:
            for r in rows[: opts.entries - 2 * len(texts)]:
                copy.write_row(("learning", r, "", "project", "u", "t", "", ""))
        bare.execute("VACUUM ANALYZE memories")
        bare.execute("VACUUM ANALYZE memory_words")

        def full(words: list[str]) -> Any:
            q = " | ".join(f"{w}:*" for w in words)
            return bare.execute(
                "SELECT id, content FROM memories WHERE search @@ %s::tsquery "
                "ORDER BY ts_rank(search, %s::tsquery) DESC LIMIT 10",
                (q, q),
            ).fetchall()

        def bounded(words: list[str]) -> Any:
            # query_memory's plan by hand, as for SQLite.
            cap = memory.CANDIDATES
            rare, common = [], []
            for w in words:
                n = bare.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memories WHERE search @@ "
                    "%s::tsquery LIMIT %s) t",
                    (f"{w}:*", cap + 1),
                ).fetchone()[0]
                (common if n > cap else rare).append(f"{w}:*")
            rank = "ts_rank(search, %s::tsquery)"
            parts, args = [], []
            if rare:
                parts.append(f"SELECT id, 0 AS tier, {rank} AS r FROM memories "
                             "WHERE search @@ %s::tsquery")  # fmt: skip
                args += [" | ".join(rare)] * 2
            if common:
                parts.append(f"(SELECT id, 1 AS tier, {rank} AS r FROM memories "
                             "WHERE search @@ %s::tsquery ORDER BY id DESC "
                             "LIMIT %s)")  # fmt: skip
                args += [" | ".join(common)] * 2 + [cap]
            return bare.execute(
                "SELECT m.id, m.content FROM (SELECT DISTINCT ON (id) id, tier, r FROM ("
                f"{' UNION ALL '.join(parts)}) u ORDER BY id, tier) h JOIN memories m "
                "ON m.id = h.id ORDER BY h.tier, h.r DESC LIMIT 10",
                args,
            ).fetchall()

        store = _store(tb)
        lat = _latencies(tb, store, queries, {"bare tsvector, full ranking": full,
                                              "bare tsvector, bounded": bounded})  # fmt: skip
        _table(f"PostgreSQL, {opts.entries:,} entries", (tool_rate, bare_rate), lat)
    finally:
        tb.close()
        bare.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE")
        bare.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--saves", type=int, default=2000)
    parser.add_argument("--pg-url", default="", help="also run on this PostgreSQL database")
    opts = parser.parse_args()
    rng = random.Random(7)
    texts = [_text(rng, 30) for _ in range(opts.saves)]
    rows = [_text(rng, 30) for _ in range(opts.entries - opts.saves)]
    queries = [" ".join(rng.choices(WORDS, WEIGHTS, k=2)) for _ in range(opts.queries)]
    print(describe())
    print(f"{opts.queries} queries of 2 keywords, limit 10; ranking bounded at "
          f"{memory.CANDIDATES} candidates")  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="kbench-"))
    try:
        (tmp / "ws").mkdir()
        bench_sqlite(opts, tmp, texts, rows, queries)
        if opts.pg_url:
            (tmp / "pg").mkdir()
            (tmp / "pg" / "ws").mkdir()
            bench_postgres(opts, tmp / "pg", texts, rows, queries)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # ~100 MB at 100k entries


if __name__ == "__main__":
    main()
