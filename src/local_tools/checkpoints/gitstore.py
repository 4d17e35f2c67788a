"""The shadow git repository checkpoints live in: in the state folder, never the user's.

One bare repository per workspace (`<state>/workspaces/<ws>/checkpoints/repo`), one
index per root (`index-<key>`): a command's snapshot is `git add -A` + `write-tree`
against that index, so git's stat cache makes an unchanged tree cheap. Blobs of single
files are written here directly as loose objects (a few hundred microseconds, no
process). git always runs with our own config only: no system or global config, no
hooks, no fsmonitor, and `info/attributes` turning off every conversion and filter a
workspace `.gitattributes` could ask for (the stored bytes are the file's bytes).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from local_tools.core.errors import StorageError
from local_tools.core.file_lock import locked
from local_tools.core.state import private_dir
from local_tools.shell.git_safety import scrub_git_variables

__all__ = ["GitError", "ShadowRepo", "blob_id"]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# Written into the repository's config once; the command line adds what only the
# command line may set (safe.directory).
_CONFIG = {
    "core.bare": "true",
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.symlinks": "true",
    "core.filemode": "true",
    "core.ignorecase": "false",
    "core.precomposeunicode": "false",
    "core.fsmonitor": "false",
    "core.hooksPath": os.devnull,
    "core.untrackedCache": "true",
    "core.splitIndex": "true",
    "core.looseCompression": "1",
    "index.version": "4",
    "gc.auto": "0",  # we collect ourselves, under our lock
    "user.name": "local-tools",
    "user.email": "checkpoints@local-tools.invalid",
}
# Every conversion off: what is stored is what is on disk, byte for byte.
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding -crlf\n"


def _config_text() -> str:
    sections: dict[str, list[str]] = {}
    for key, value in _CONFIG.items():
        section, name = key.split(".", 1)
        sections.setdefault(section, []).append(f"\t{name} = {value}\n")
    return "".join(f"[{s}]\n" + "".join(lines) for s, lines in sections.items())


class GitError(StorageError):
    """git failed (or is missing): the message says which command and why."""


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class ShadowRepo:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.git_dir = folder / "repo"
        self._ready = False
        self._thread_lock = threading.RLock()

    # ------------------------------------------------------------------ setup

    def ensure(self) -> None:
        """Create the repository on first use (idempotent, safe across processes)."""
        if self._ready:
            return
        with self.locked():
            if not (self.git_dir / "HEAD").is_file():
                private_dir(self.folder)
                self.run(["init", "-q", "--bare", str(self.git_dir)], git_dir=False)
                with open(self.git_dir / "config", "a", encoding="utf-8") as fh:
                    fh.write(_config_text())  # one write, not a `git config` per key
                info = self.git_dir / "info"
                info.mkdir(exist_ok=True)
                (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
            self._ready = True

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive use of the indexes and the history: threads and processes."""
        with self._thread_lock, locked(self.folder / "lock", what="The checkpoint store", wait=60):
            yield

    def index_path(self, root: Path) -> Path:
        key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
        return self.folder / f"index-{key}"

    # ------------------------------------------------------------------ running git

    def run(
        self,
        args: Sequence[str],
        *,
        work_tree: Path | None = None,
        index: Path | None = None,
        stdin: bytes | None = None,
        git_dir: bool = True,
        ok_codes: tuple[int, ...] = (0,),
    ) -> bytes:
        """Run git on the shadow repository with our config only; stdout, or GitError."""
        argv = ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=" + os.devnull]
        if git_dir:
            argv += ["--git-dir", str(self.git_dir)]
        if work_tree is not None:
            argv += ["--work-tree", str(work_tree)]
        env = scrub_git_variables(os.environ)
        env.update(
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            HOME=str(self.folder),
            XDG_CONFIG_HOME=str(self.folder),
            GIT_TERMINAL_PROMPT="0",
            GIT_OPTIONAL_LOCKS="0",
            LC_ALL="C",
        )
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        try:
            proc = subprocess.run(
                argv + list(args),
                input=stdin,
                capture_output=True,
                env=env,
                cwd=str(work_tree if work_tree is not None else self.folder),
                check=False,
                creationflags=_NO_WINDOW,
            )
        except FileNotFoundError:
            raise GitError(
                "Checkpoints need git, which is not installed (or not on PATH)."
            ) from None
        except OSError as exc:
            raise GitError(f"Could not run git for checkpoints: {exc}") from None
        if proc.returncode not in ok_codes:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(
                f"git {args[0]} failed for checkpoints (exit {proc.returncode}): "
                + (detail[-1] if detail else "no message")
            )
        return proc.stdout

    # ------------------------------------------------------------------ objects

    def write_blob(self, data: bytes) -> str:
        """Store `data` as a loose object (nothing when it is already there)."""
        sha = blob_id(data)
        folder = self.git_dir / "objects" / sha[:2]
        target = folder / sha[2:]
        if target.exists():
            return sha
        folder.mkdir(exist_ok=True)
        tmp = folder / f"tmp_obj_{os.getpid()}_{threading.get_ident()}"
        packed = zlib.compress(b"blob %d\0" % len(data) + data, 1)
        with open(tmp, "wb") as fh:
            fh.write(packed)
        os.replace(tmp, target)
        return sha

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs, loose or packed (`git cat-file --batch`)."""
        wanted = list(dict.fromkeys(s for s in shas if s))
        if not wanted:
            return {}
        out = self.run(["cat-file", "--batch"], stdin="".join(f"{s}\n" for s in wanted).encode())
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[1] == b"missing":
                raise GitError(f"The checkpoint store has lost object {sha} (was it deleted?).")
            size = int(header[2])
            blobs[sha] = out[pos : pos + size]
            pos += size + 1
        return blobs


if sys.platform == "win32":
    _NO_WINDOW = subprocess.CREATE_NO_WINDOW
else:
    _NO_WINDOW = 0
