"""Which workspaces the user trusts: their own config file and plugins take effect.

A cloned repository is someone else's folder. Its `local-tools.toml` could widen the
jail or send a secret to a server of its choosing, and its `.local-tools/tools/*.py`
would run as the user on the next start. So both wait until the user runs
`local-tools trust` (or a caller passes `Toolbox(..., trust=True)`).

A trust record lives in the state dir (out of every tool's and command's reach), keyed
by the workspace's real path, with the SHA-256 of the config file and of every file
under `.local-tools/tools/`. Trust holds only while that set is the same: a new plugin,
an edited one or an edited config makes the workspace untrusted again. Loaders check
each file's hash against the record on the very bytes they use, so a file swapped
between the check and the load is not used either.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_tools.core.state import write_state_file

__all__ = [
    "PLUGIN_DIR",
    "TRUST_FILE",
    "WORKSPACE_CONFIG",
    "Trust",
    "TrustStore",
    "digest",
    "fingerprint",
    "stored_trust",
    "trust_command",
    "workspace_key",
]

# The files of a workspace that steer local-tools (the same names config.py and
# registry.py use; kept here so this module imports neither).
WORKSPACE_CONFIG = "local-tools.toml"
PLUGIN_DIR = Path(".local-tools") / "tools"
TRUST_FILE = "trusted-workspaces.json"
# More plugin files than this are not hashed one by one: the workspace cannot be trusted.
_MAX_FILES = 2000

# What a loader is told: True (the caller vouches for whatever is there), False (nothing
# of the workspace's own applies) or the trusted hashes by workspace-relative name.
Trust = bool | Mapping[str, str]


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def workspace_key(workspace: str | os.PathLike[str]) -> str:
    """The real path: a symlink to a trusted folder is the same workspace, a copy is not."""
    return os.path.realpath(os.fspath(workspace))


def workspace_files(workspace: Path) -> dict[str, Path]:
    """The workspace-relative names and paths of its config file and plugin files."""
    files: dict[str, Path] = {}
    config = workspace / WORKSPACE_CONFIG
    if config.is_file():
        files[WORKSPACE_CONFIG] = config
    folder = workspace / PLUGIN_DIR
    if folder.is_dir():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                path = Path(dirpath) / name
                files[path.relative_to(workspace).as_posix()] = path
                if len(files) > _MAX_FILES:
                    raise OSError(f"more than {_MAX_FILES} files under {folder}")
    return files


def fingerprint(workspace: Path) -> dict[str, str]:
    """`{name: sha256}` of the files trust covers; an unreadable file gets a value that
    matches no hash, so it is never taken for the trusted one."""
    result: dict[str, str] = {}
    try:
        files = workspace_files(workspace)
    except OSError as exc:
        return {str(PLUGIN_DIR): f"unreadable: {exc}"}
    for name, path in files.items():
        try:
            result[name] = digest(path.read_bytes())
        except OSError as exc:
            result[name] = f"unreadable: {exc.strerror or exc}"
    return result


@dataclass(frozen=True)
class TrustRecord:
    workspace: str
    files: dict[str, str]
    trusted_at: float


class TrustStore:
    """`<state dir>/trusted-workspaces.json`, a private (0600) state file."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.path = Path(state_dir) / TRUST_FILE

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: nothing is trusted
        entries = data.get("workspaces") if isinstance(data, dict) else None
        return entries if isinstance(entries, dict) else {}

    def _write(self, entries: Mapping[str, Any]) -> None:
        text = json.dumps({"version": 1, "workspaces": entries}, indent=2, sort_keys=True)
        write_state_file(self.path, text + "\n")

    def get(self, workspace: str | os.PathLike[str]) -> TrustRecord | None:
        key = workspace_key(workspace)
        entry = self._read().get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
            return None
        files = {str(k): str(v) for k, v in entry["files"].items()}
        return TrustRecord(key, files, float(entry.get("trusted_at") or 0))

    def records(self) -> list[TrustRecord]:
        found = (self.get(key) for key in sorted(self._read()))
        return [r for r in found if r is not None]

    def trust(self, workspace: str | os.PathLike[str], files: Mapping[str, str]) -> TrustRecord:
        key = workspace_key(workspace)
        entries = self._read()
        record = TrustRecord(key, dict(files), time.time())
        entries[key] = {"files": record.files, "trusted_at": record.trusted_at}
        self._write(entries)
        return record

    def revoke(self, workspace: str | os.PathLike[str]) -> bool:
        entries = self._read()
        if entries.pop(workspace_key(workspace), None) is None:
            return False
        self._write(entries)
        return True


def stored_trust(workspace: Path, state_dir: str | os.PathLike[str]) -> Trust:
    """The trusted hashes when the workspace's files are exactly the ones trusted, else
    False (never trusted, or something was added, changed or removed since)."""
    record = TrustStore(state_dir).get(workspace)
    if record is None:
        return False
    return record.files if fingerprint(Path(workspace_key(workspace))) == record.files else False


def trust_command(workspace: str | os.PathLike[str]) -> str:
    """What the user runs to trust this workspace (shown wherever something was ignored)."""
    return f"local-tools trust --workspace {_shell_quote(workspace_key(workspace))}"


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
