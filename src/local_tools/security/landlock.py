"""The Landlock sandbox helper: the fallback engine when bubblewrap does not work here.

Run as a script in a fresh interpreter, stdlib only, so nothing of ours runs between
fork and exec in the (threaded) agent process::

    python -I -S landlock.py [--no-ns] [--net] --tmp DIR --cwd DIR [--write PATH]...
                             [--mount KIND:PATH]... [--seccomp HEX] -- ARGV...

With namespaces (the default) it enters a new user, mount and PID namespace (and a
network namespace unless ``--net``: only a loopback that is down, so every TCP connect
and UDP send fails), mounts a fresh tmpfs on /dev/shm, forks the
command as PID 1 of the namespace (so when this helper dies, by any signal, the
kernel ends every process inside, ``setsid`` ones too) and waits for it. Then the
command is restricted by Landlock: read and execute everywhere, write only beneath
the ``--write`` paths, the temp dir DIR (TMPDIR; the host's /tmp stays readable,
not writable) and a few devices (/dev/null...); no new
privileges; no capabilities; signals to processes outside and (without ``--net``)
abstract Unix sockets are scoped out at ABI >= 6; TCP bind/connect are refused by
Landlock too at ABI >= 4 without ``--net``.

Before that, in its own mount namespace, the ``--mount`` operations, in order: ``ro``
binds PATH read-only over itself (what steers local-tools, inside a writable root),
``hide`` puts an empty read-only tmpfs over a directory or /dev/null over a file,
``bind``/``robind`` bring back (read-write / read-only) a path under a hidden
directory. Sources are opened before anything is mounted.

``--no-ns`` (no user namespaces on this machine): Landlock only, the command is
exec'd in place; no PID namespace,
and without ``--net`` only TCP is blocked, and only at ABI >= 4.

Exits 125 when the sandbox cannot be set up (it never runs the command unconfined),
127/126 when the command cannot be executed, else the command's status (128+N when
killed by signal N).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
from typing import NoReturn

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

# Landlock system calls: one number on every architecture with the unified table.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_ABI1 = (1 << 13) - 1  # execute ... make_sym
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
# IOCTL_DEV (ABI 5) is left unhandled: terminals and devices keep their ioctls.
_NET_TCP = (1 << 0) | (1 << 1)  # bind, connect (ABI 4)
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_CLONE_NEWPID, _CLONE_NEWNET = 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 24, 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is unavailable."""
    try:
        abi = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(abi), 0)


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


# Run only on Linux (sandbox.detect_engine); the guards below say so to mypy too.
_LINUX_ONLY = "the Landlock helper runs on Linux only"


def _fail(message: str) -> NoReturn:
    os.write(2, f"local-tools sandbox: {message}\n".encode(errors="replace"))
    os._exit(125)


def _parse(args: list[str]) -> tuple[dict[str, list[str]], set[str], list[str]]:
    """Options with values, flags, and the command after ``--``."""
    values: dict[str, list[str]] = {
        "--tmp": [],
        "--cwd": [],
        "--write": [],
        "--seccomp": [],
        "--mount": [],
    }
    flags: set[str] = set()
    i = 0
    while i < len(args) and args[i] != "--":
        if args[i] in values and i + 1 < len(args):
            values[args[i]].append(args[i + 1])
            i += 2
        elif args[i] in ("--net", "--no-ns"):
            flags.add(args[i])
            i += 1
        else:
            _fail(f"bad helper argument {args[i]!r}")
    command = args[i + 1 :]
    if not command or len(values["--tmp"]) != 1 or len(values["--cwd"]) != 1:
        _fail("usage: landlock.py --tmp DIR --cwd DIR [--write P]... -- ARGV")
    return values, flags, command


def _open_path(path: str) -> int | None:
    if not sys.platform.startswith("linux"):
        _fail(_LINUX_ONLY)
    try:
        return os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None  # a missing writable root grants nothing


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    ret = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(ret, f"mount {target}")


# statvfs flags that a remount in a user namespace must keep (they are locked).
_KEPT_FLAGS = 2 | 4 | 8 | 1024 | 2048 | 4096  # nosuid nodev noexec noatime nodiratime relatime


def _read_only(path: str) -> None:
    if not sys.platform.startswith("linux"):
        _fail(_LINUX_ONLY)
    kept = os.statvfs(path).f_flag & _KEPT_FLAGS
    _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept)


def _apply_mounts(ops: list[str]) -> None:
    """The ``--mount KIND:PATH`` operations, in order (see the module docstring)."""
    if not sys.platform.startswith("linux"):
        _fail(_LINUX_ONLY)
    parsed = [tuple(op.split(":", 1)) for op in ops]
    if any(len(op) != 2 or op[0] not in ("ro", "hide", "bind", "robind") for op in parsed):
        _fail(f"bad --mount operation in {ops!r}")
    # Sources first: a later tmpfs may cover them.
    sources = {p: fd for k, p in parsed if k != "hide" and (fd := _open_path(p)) is not None}
    tmpfs: list[str] = []
    for kind, path in parsed:
        if kind == "hide":
            if os.path.isdir(path) and not os.path.islink(path):
                _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=64k")
                tmpfs.append(path)
            elif os.path.lexists(path):
                _mount("/dev/null", path, None, _MS_BIND)
                _read_only(path)
            continue
        fd = sources.get(path)
        if fd is None:
            continue  # gone meanwhile
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
        if not os.path.lexists(path):  # its mount point, inside a tmpfs of ours
            os.makedirs(path if is_dir else os.path.dirname(path), exist_ok=True)
            if not is_dir:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND)
        if kind != "bind":
            _read_only(path)
    for path in tmpfs:
        _read_only(path)
    for fd in sources.values():
        os.close(fd)


def _enter_namespaces(net: bool) -> None:
    if not sys.platform.startswith("linux"):
        _fail(_LINUX_ONLY)
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | (0 if net else _CLONE_NEWNET)
    _check(_libc.unshare(flags), "unshare")
    # Keep our identity inside: the same uid and gid, mapped to themselves.
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _private_shm() -> int | None:
    """A fresh tmpfs on /dev/shm (POSIX shared memory, semaphores), or None."""
    if not os.path.isdir("/dev/shm"):
        return None
    try:
        _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
    except OSError:
        return None  # the host's stays read-only
    return _open_path("/dev/shm")


def _mount_proc() -> None:
    """Our PID namespace's /proc; a container may refuse it (the host's view stays)."""
    try:
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except OSError:
        return


def _restrict(abi: int, net: bool, readable: list[int], writable: list[int]) -> None:
    """Landlock: read and execute beneath `readable`, every right beneath `writable`."""
    handled = _FS_ABI1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled, _NET_TCP if not net and abi >= 4 else 0, 0)
    if abi >= 6:
        attr.scoped = _SCOPE_SIGNAL | (0 if net else _SCOPE_ABSTRACT_UNIX)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(
        _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    file_rights = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (_FS_TRUNCATE & handled)
    read = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
    rules = [(fd, read) for fd in readable] + [(fd, handled) for fd in writable]
    for fd, rights in rules:
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
        rule = _PathBeneath(rights if is_dir else rights & file_rights, fd)
        _check(
            _libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0),
            "landlock_add_rule",
        )
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    os.close(ruleset)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def _install_filter(hex_program: str) -> None:
    """A seccomp filter given by the caller (security/seccomp.py), as hex bytes."""
    program = bytes.fromhex(hex_program)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def _drop_capabilities() -> None:
    """Empty the bounding set, so a command running as uid 0 gets no capability."""
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows


def _exec(command: list[str]) -> NoReturn:
    if not sys.platform.startswith("linux"):
        _fail(_LINUX_ONLY)
    # Python ignores these two; a command expects the defaults (`yes | head` ends).
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as e:
        os.write(2, f"local-tools sandbox: {command[0]}: {e.strerror}\n".encode(errors="replace"))
        os._exit(127 if isinstance(e, FileNotFoundError) else 126)


def _wait_for(pid: int) -> NoReturn:
    """The helper outside: wait for the command and exit with its status."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # die quietly: the child follows
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def main(args: list[str]) -> NoReturn:
    if not sys.platform.startswith("linux"):
        _fail(_LINUX_ONLY)
    values, flags, command = _parse(args)
    net, use_ns = "--net" in flags, "--no-ns" not in flags
    tmp, cwd = values["--tmp"][0], values["--cwd"][0]
    abi = landlock_abi()
    if abi < 1:
        _fail("Landlock is not available (Linux >= 5.13 with Landlock enabled is needed)")
    try:
        if use_ns:
            # First: a bind mount's source must be in our (new) mount namespace.
            _enter_namespaces(net)
        tmp_fd = os.open(tmp, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
        root_fd = os.open("/", os.O_PATH | os.O_CLOEXEC)
        write_fds = [(p, fd) for p in values["--write"] if (fd := _open_path(p)) is not None]
        os.environ["TMPDIR"] = tmp
        if not use_ns:
            devices = [fd for d in _DEVICES if (fd := _open_path(d)) is not None]
            _restrict(abi, net, [root_fd], [tmp_fd, *(fd for _, fd in write_fds), *devices])
            for program in values["--seccomp"]:
                _install_filter(program)
            _drop_capabilities()
            os.chdir(cwd)
            _exec(command)
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing we mount reaches the host
        shm = _private_shm()
        _apply_mounts(values["--mount"])
        # The child watches this pipe: EOF means the helper is already gone.
        read_end, alive = os.pipe()
        pid = os.fork()
    except OSError as e:
        _fail(f"cannot set up the sandbox: {e}")
    if pid:
        os.close(read_end)
        _wait_for(pid)  # `alive` stays open until the helper dies
    try:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        os.close(alive)
        if select.select([read_end], [], [], 0)[0]:
            os._exit(137)  # the helper died before the line above: so do we
        os.close(read_end)
        os.setsid()  # no way back to a terminal of the caller's session
        _mount_proc()
        devices = [fd for d in _DEVICES if (fd := _open_path(d)) is not None]
        writable = [tmp_fd, *(fd for _, fd in write_fds), *devices]
        _restrict(abi, net, [root_fd], writable + ([shm] if shm is not None else []))
        for program in values["--seccomp"]:
            _install_filter(program)
        _drop_capabilities()
        os.chdir(cwd)
    except OSError as e:
        _fail(f"cannot set up the sandbox: {e}")
    _exec(command)


if __name__ == "__main__":
    main(sys.argv[1:])
