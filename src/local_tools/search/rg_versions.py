"""rg's version, remembered between processes: `rg --version` costs 10-15 ms per start.

A fresh server used to pay that on its first grep or glob. The answer is kept in the
state folder (private: 0700, the file 0600) under the binary's absolute path, with what
changes when the file is replaced (size, mtime, ctime, inode): a new rg at the same
path is asked again. Anything odd in the file (unreadable, not JSON, wrong shapes) is
the same as no entry; a failed write is ignored: the cache only saves time.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from local_tools.core.state import default_state_dir, write_state_file

__all__ = ["cache_file", "recall", "remember"]

Version = tuple[int, int, int]
_FILE = "ripgrep-versions.json"
_MAX_ENTRIES = 16
_lock = threading.Lock()
_loaded: dict[str, Any] | None = None
_loaded_from: Path | None = None


def cache_file() -> Path:
    return default_state_dir() / _FILE


def _entries(path: Path) -> dict[str, Any]:
    global _loaded, _loaded_from
    if _loaded is None or _loaded_from != path:
        data: Any = {}
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
        _loaded, _loaded_from = (data if isinstance(data, dict) else {}), path
    return _loaded


def _valid_version(raw: Any) -> Version | None:
    if (
        isinstance(raw, list)
        and len(raw) == 3
        and all(type(n) is int and 0 <= n < 1 << 31 for n in raw)
    ):
        return raw[0], raw[1], raw[2]
    return None


def recall(binary: str, identity: Sequence[int]) -> Version | None:
    """The version remembered for this very file, or None."""
    try:
        with _lock:
            entry = _entries(cache_file()).get(binary)
    except (OSError, ValueError, RuntimeError):  # no home folder to find, and the like
        return None
    if not isinstance(entry, dict) or entry.get("id") != list(identity):
        return None
    return _valid_version(entry.get("version"))


def remember(binary: str, identity: Sequence[int], version: Version) -> None:
    try:
        path = cache_file()
        with _lock:
            entries = _entries(path)
            entries.pop(binary, None)
            entries[binary] = {"id": list(identity), "version": list(version)}
            while len(entries) > _MAX_ENTRIES:  # oldest first: dicts keep insertion order
                del entries[next(iter(entries))]
            write_state_file(path, json.dumps(entries, indent=1))
    except (OSError, ValueError, RuntimeError):
        pass
