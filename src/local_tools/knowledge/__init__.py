"""The workspace's knowledge: memory entries, key/value notes, project data, checks.

An engine in the sense of `editing/` and `search/`: plain values in, plain data out,
the project's errors raised. The tools in `tools/` are thin modules over it.
"""

from __future__ import annotations

from local_tools.knowledge.store import KNOWLEDGE_FILE, KnowledgeStore, open_store, store_path

__all__ = ["KNOWLEDGE_FILE", "KnowledgeStore", "open_store", "store_path"]
