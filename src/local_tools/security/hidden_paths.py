"""What a sandboxed command must not see: credential stores, and `.env`-style secrets.

`credential_paths(deny, allow)` lists the user's usual credential stores that exist
(the home found with `os.path.expanduser` at call time), plus `[sandbox] deny_read`,
minus `[sandbox] allow_read`. `SecretFiles` finds the `.env`-style files under the
roots for commands that run without asking: the same names `read_file` asks for
(security/defaults.py). The first scan walks the tree; later ones stat only the
directories and re-list those whose mtime changed (an entry added, removed or renamed
changes its directory's mtime), so a repeated call costs one stat per directory.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "CREDENTIAL_STORES",
    "MAX_DIRS",
    "MAX_FILES",
    "SecretFiles",
    "credential_paths",
    "is_secret_name",
]

# Relative to the home directory.
CREDENTIAL_STORES: tuple[str, ...] = (
    ".ssh", ".aws", ".config/gcloud", ".azure", ".kube", ".docker", ".gnupg",
    ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".config/gh", ".config/hub",
    ".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
    ".vault-token", ".local/share/keyrings", ".password-store",
    # browser profiles: cookies and saved passwords
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ".config/microsoft-edge", ".config/vivaldi", ".config/opera", ".var/app",
    ".thunderbird",
    # more credential files, and shell and REPL histories (tokens typed on command lines)
    ".config/git/credentials", ".gem/credentials", ".config/op", ".bash_history",
    ".zsh_history", ".histfile", ".local/share/fish/fish_history", ".python_history",
    ".psql_history", ".mysql_history", ".node_repl_history", ".sqlite_history",
    ".rediscli_history", ".irb_history", ".lesshst",
)  # fmt: skip

# Directories not searched for secret files: version control's own, caches, and trees of
# installed packages. By name only: a marker file (a virtualenv's pyvenv.cfg) is no
# reason, since the model can write one with write_file above the user's `.env`; a
# folder of these names it can make, but not move the user's files into.
_SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", "site-packages", "dist-packages"}
)  # fmt: skip
_SAFE_SUFFIXES = (".example", ".sample", ".template")
MAX_DIRS = 50_000  # a tree with more directories is searched only this far
# Secret files hidden at most, one mount each (a mount costs milliseconds): a command
# nobody approved asks when there are more (`SecretFiles.find` lists one more to tell).
MAX_FILES = 200
_SETTLED_NS = 2_000_000_000
_Listing = tuple[int, list[str], list[str], bool]


def is_secret_name(name: str) -> bool:
    """`.env`, `prod.env`, `.env.local`: as the read:file protection (not `.env.example`)."""
    if name.endswith(_SAFE_SUFFIXES):
        return False
    return name.endswith(".env") or name.startswith(".env.")


def _expand(path: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(path)


def credential_paths(deny: Sequence[str] = (), allow: Sequence[str] = ()) -> list[Path]:
    """The credential stores and `deny` paths that exist, less those under `allow`."""
    home = os.path.expanduser("~")
    wanted = [os.path.join(home, p) for p in CREDENTIAL_STORES]
    wanted += [_expand(p, home) for p in deny if p.strip()]
    allowed = [os.path.realpath(_expand(p, home)) for p in allow if p.strip()]
    out: dict[str, None] = {}
    for path in wanted:
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if any(real == a or real.startswith(a.rstrip("/") + "/") for a in allowed):
            continue
        out[real] = None
    return [Path(p) for p in out]


class SecretFiles:
    """The secret files under some roots, kept up to date cheaply between calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # directory -> (mtime_ns, secret files in it, subdirectories, settled): a
        # listing is trusted only when made well after the last change (mtimes tick
        # coarsely); an unsettled one is made again next time
        self._dirs: dict[str, _Listing] = {}
        self._roots: list[str] = []
        self.complete = True  # False when the search stopped at MAX_DIRS

    def find(self, roots: Iterable[Path]) -> list[Path]:
        with self._lock:
            wanted = [os.path.realpath(r) for r in roots]
            if wanted != self._roots:
                self._roots, self._dirs = wanted, {}
            # One pass over the known folders: a stat each. What changed is listed
            # again, with the folders that appeared in it; what vanished drops out.
            stat = os.stat
            stale: list[str] = []
            for d, e in self._dirs.items():
                try:
                    if e[3] and stat(d, follow_symlinks=False).st_mtime_ns == e[0]:
                        continue
                except OSError:
                    pass
                stale.append(d)
            for d in stale:
                del self._dirs[d]
            stack = stale + [r for r in wanted if r not in self._dirs]
            if not self._dirs:
                self.complete = True
            # (once cut short, a search stays so: what was not walked is not known)
            while stack:
                d = stack.pop()
                if d in self._dirs:
                    continue
                if len(self._dirs) >= MAX_DIRS:
                    self.complete = False
                    break
                entry = self._listing(d)
                if entry is None:
                    continue
                self._dirs[d] = entry
                stack.extend(sub for sub in entry[2] if sub not in self._dirs)
            found = [f for e in self._dirs.values() if e[1] for f in e[1]]
            return [Path(p) for p in found[: MAX_FILES + 1]]

    def _listing(self, d: str) -> _Listing | None:
        try:
            mtime = os.stat(d, follow_symlinks=False).st_mtime_ns
        except OSError:
            return None
        files: list[str] = []
        subdirs: list[str] = []
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            if e.name not in _SKIPPED_DIRS:
                                subdirs.append(e.path)
                        elif is_secret_name(e.name) and e.is_file():  # a link's target too
                            files.append(e.path)
                    except OSError:
                        continue
        except OSError:
            return None
        return (mtime, files, subdirs, mtime < time.time_ns() - _SETTLED_NS)
