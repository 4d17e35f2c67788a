"""query_memory and save_memory against bare SQLite FTS5 doing the same, in one run.

1. save throughput: `save_memory` through the whole runner (validation, the store's
   IMMEDIATE transaction, the FTS triggers, the audit log off) against a bare
   `INSERT` into a table with the same FTS5 index and triggers, one transaction each.
2. query latency over N entries: `query_memory` through the runner (keywords widened
   to prefixes and near spellings, bm25, the merged-scope order, the context string)
   against a bare `SELECT ... WHERE fts MATCH ? ORDER BY bm25 LIMIT 10` on a copy of
   the same rows. p50/p99 over the same random keyword sets.

    python benchmarks/knowledge.py [--entries 100000] [--queries 500]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from local_tools import Toolbox
from local_tools.knowledge.sqlite import MIGRATIONS, statements
from machine import describe

# A Zipf-like vocabulary: a few words everywhere, most words rare, as in real notes.
_RNG = random.Random(1)
WORDS = sorted({"".join(_RNG.choice("abcdefghiklmnoprstuw") for _ in range(_RNG.randint(4, 9)))
                for _ in range(20_000)})  # fmt: skip
WEIGHTS = [1 / (rank + 1) for rank in range(len(WORDS))]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, WEIGHTS, k=n))


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--saves", type=int, default=2000)
    opts = parser.parse_args()
    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="kbench-"))
    (tmp / "ws").mkdir()
    tb = Toolbox(tmp / "ws", state_dir=tmp / "state", audit=False, plugins=False)
    bare = sqlite3.connect(tmp / "bare.sqlite", isolation_level=None)
    bare.execute("PRAGMA journal_mode = WAL")
    for statement in statements(MIGRATIONS[0]):
        bare.execute(statement)

    # 1. save throughput
    texts = [_text(rng, 30) for _ in range(opts.saves)]
    t0 = time.perf_counter()
    for text in texts:
        env = tb.run("save_memory", {"kind": "insight", "content": text, "tags": ["bench"]})
        assert env["success"], env
    tool_rate = opts.saves / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for text in texts:
        bare.execute("BEGIN IMMEDIATE")
        bare.execute(
            "INSERT INTO memories(kind, content, tags, scope, user_id, tool, created_at, "
            "updated_at) VALUES ('insight', ?, 'bench', 'project', 'u', 't', '', '')",
            (text,),
        )
        bare.execute("COMMIT")
    bare_rate = opts.saves / (time.perf_counter() - t0)

    # Fill both stores to N entries in bulk (the same rows).
    rest = opts.entries - opts.saves
    rows = [(_text(rng, 30),) for _ in range(rest)]
    for conn in (sqlite3.connect(tb_db(tmp)), bare):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO memories(kind, content, tags, scope, user_id, tool, created_at, "
            "updated_at) VALUES ('learning', ?, '', 'project', 'u', 't', '', '')",
            rows,
        )
        conn.execute("COMMIT")

    # 2. query latency
    queries = [" ".join(rng.choices(WORDS, WEIGHTS, k=2)) for _ in range(opts.queries)]
    tool_ms, bare_ms = [], []
    for q in queries:
        t0 = time.perf_counter()
        env = tb.run("query_memory", {"keywords": q, "limit": 10})
        tool_ms.append((time.perf_counter() - t0) * 1000)
        assert env["success"], env
        match = " OR ".join(f'"{w}"*' for w in q.split())
        t0 = time.perf_counter()
        bare.execute(
            "SELECT m.* FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            "WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT 10",
            (match,),
        ).fetchall()
        bare_ms.append((time.perf_counter() - t0) * 1000)
    tb.close()

    print(describe())
    print(f"save: save_memory {tool_rate:,.0f}/s, bare INSERT {bare_rate:,.0f}/s")
    print(f"query over {opts.entries:,} entries ({opts.queries} queries, 2 keywords, limit 10):")
    print("| | p50 ms | p99 ms |\n|---|---|---|")
    print(f"| query_memory | {statistics.median(tool_ms):.2f} | {_pct(tool_ms, 99):.2f} |")
    print(f"| bare FTS5 | {statistics.median(bare_ms):.2f} | {_pct(bare_ms, 99):.2f} |")


def tb_db(tmp: Path) -> Path:
    return next((tmp / "state").rglob("knowledge.sqlite"))


if __name__ == "__main__":
    main()
