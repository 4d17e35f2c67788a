"""Ending a command's whole process tree, including what tried to get away.

A command's processes are found four ways, because each alone misses some:
- its process group (every command starts a new session): what `kill -- -PGID` ends;
- a cgroup v2 of its own, where this process may create one: `cgroup.kill` ends all
  members at once, even those that called setsid() — the classic orphaned
  grandchild holding the output pipe (`setsid sleep 100 &`);
- the descendants psutil sees, snapshotted before anything dies (orphans are
  reparented to init as soon as their parent goes);
- a marker variable in each command's environment (`LOCAL_TOOLS_RUN`), which
  descendants inherit: the last resort scan of /proc when no cgroup is available.
Under the bwrap sandbox the command also has a PID namespace, which the kernel
empties when its first process dies.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import signal
import sys
from pathlib import Path

import psutil

__all__ = ["MARKER_VARIABLE", "ProcessTree", "cgroup_info", "kill_marked", "sweep_cgroups"]

log = logging.getLogger(__name__)

MARKER_VARIABLE = "LOCAL_TOOLS_RUN"
# Tests set it to follow the Windows paths on Linux; mypy needs `sys.platform` itself.
_IS_WINDOWS = sys.platform == "win32"
_counter = itertools.count(1)


class ProcessTree:
    """The processes of one command: created before it starts, ended with `kill()`."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.pid: int | None = None
        self.cgroup: Path | None = None

    def prepare(self) -> bool:
        """Before spawning: make the command's cgroup. False where there is none."""
        parent = _cgroup_parent()
        if parent is None:
            return False
        path = parent / f"run-{next(_counter)}"
        try:
            path.mkdir()
        except OSError:
            return False
        self.cgroup = path
        return True

    def adopt(self, pid: int) -> None:
        """Right after spawning: move the command into its cgroup.

        Whatever the shell forks before this write stays outside the cgroup, so the
        caller holds the shell back until adopt() returns (see RunningCommand).
        """
        self.pid = pid
        if self.cgroup is None:
            return
        try:
            (self.cgroup / "cgroup.procs").write_text(str(pid))
        except OSError:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()
            self.cgroup = None

    def alive(self) -> bool:
        """Whether any process of the command other than zombies is still there."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                return bool((self.cgroup / "cgroup.procs").read_text().strip())
        if sys.platform != "win32" and self.pid is not None and not _IS_WINDOWS:
            try:
                os.killpg(self.pid, 0)
                return True
            except (ProcessLookupError, PermissionError):
                return False
        return False

    def kill(self, *, scan: bool = False) -> None:
        """SIGKILL everything; `scan` also sweeps /proc for the marker (slower)."""
        descendants = _descendants(self.pid)
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                (self.cgroup / "cgroup.kill").write_text("1")
        if sys.platform != "win32" and self.pid is not None and not _IS_WINDOWS:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        for proc in descendants:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        if scan or self.cgroup is None:
            kill_marked(self.marker)

    def release(self) -> bool:
        """Remove the cgroup if it is empty; False while something is still in it."""
        if self.cgroup is None:
            return True
        try:
            self.cgroup.rmdir()
        except OSError:
            return False  # still populated (EBUSY): kill() first; swept at exit anyway
        self.cgroup = None
        return True

    def ended_whole(self) -> bool:
        """After the command's first process exited: nothing else of it is left.

        With a cgroup, removing it is the test (it fails while populated), so the
        common case costs one rmdir and no read.
        """
        return self.release() if self.cgroup is not None else not self.alive()


def kill_marked(marker: str) -> int:
    """Kill every process whose environment carries `LOCAL_TOOLS_RUN=<marker>`."""
    needle = marker
    killed = 0
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER_VARIABLE) == needle:
                proc.kill()
                killed += 1
        except (psutil.Error, OSError):
            continue
    return killed


def _descendants(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


_parent: Path | bool | None = False  # False: not looked up yet


def _cgroup_parent() -> Path | None:
    """A cgroup v2 directory of this process's own in which per-command groups go."""
    global _parent
    if _parent is not False:
        return _parent  # type: ignore[return-value]
    _parent = None
    if not sys.platform.startswith("linux"):
        return None
    try:
        own = next(
            line.split(":", 2)[2].strip()
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.startswith("0::")
        )
    except (OSError, StopIteration):
        return None
    for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        base = Path(mount + own.rstrip("/"))
        if not (base / "cgroup.procs").exists():
            continue
        parent = base / f"local-tools-{os.getpid()}"
        try:
            parent.mkdir(exist_ok=True)
            if not (parent / "cgroup.kill").exists():  # kernels before 5.14
                parent.rmdir()
                continue
        except OSError:
            continue
        _parent = parent
        atexit.register(sweep_cgroups)
        return parent
    return None


def cgroup_info() -> str:
    """How a command's processes are tracked here, for `doctor`."""
    parent = _cgroup_parent()
    if parent is not None:
        return f"cgroup v2 per command (cgroup.kill), under {parent.parent}"
    if _IS_WINDOWS:
        return "process tree via psutil (no cgroups on Windows)"
    return "process group + psutil + environment marker (no writable cgroup v2 here)"


def sweep_cgroups() -> None:
    """At exit: kill whatever is left in our cgroups and remove them."""
    parent = _parent if isinstance(_parent, Path) else None
    if parent is None:
        return
    for child in parent.glob("run-*"):
        with contextlib.suppress(OSError):
            (child / "cgroup.kill").write_text("1")
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        parent.rmdir()
