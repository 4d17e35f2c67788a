"""Platform facts and the raw system calls the jail needs that ``os`` does not wrap.

The open flags are read once here (``0`` where the platform lacks one) so the rest of
the jail can combine them unconditionally. ``openat2(2)`` and ``renameat2(2)`` are
called through ctypes: the first lets the kernel resolve a path beneath a directory
descriptor (``RESOLVE_BENEATH``), the second renames without ever replacing an
existing name (``RENAME_NOREPLACE``). Both degrade to "not available" instead of
failing, so callers can fall back to the portable walk.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from functools import cache

__all__ = [
    "DIR_FLAGS",
    "IS_WINDOWS",
    "O_BINARY",
    "O_CLOEXEC",
    "O_DIRECTORY",
    "O_NOCTTY",
    "O_NOFOLLOW",
    "O_NONBLOCK",
    "O_PATH",
    "READ_FLAGS",
    "RESOLVE_BENEATH",
    "RESOLVE_NO_MAGICLINKS",
    "fd_path",
    "openat2",
    "openat2_available",
    "rename_exchange",
    "renameat2_noreplace",
]

IS_WINDOWS = os.name == "nt"
O_PATH = getattr(os, "O_PATH", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOCTTY = getattr(os, "O_NOCTTY", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
O_BINARY = getattr(os, "O_BINARY", 0)
DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
# Reading a file: O_NONBLOCK so a FIFO cannot hang the open; O_NOCTTY so a tty never
# becomes ours; a final symlink is refused.
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_BINARY

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
_RENAME_NOREPLACE = 1
_RENAME_EXCL = 4  # macOS renameatx_np
_RENAME_EXCHANGE = 2  # Linux renameat2; macOS renameatx_np's RENAME_SWAP is 2 as well
_AT_FDCWD = -100
# openat2 has the same number on every architecture using the unified syscall table.
_OPENAT2_NR = {
    m: 437
    for m in (
        "x86_64", "amd64", "aarch64", "arm64", "i386", "i686", "armv7l", "armv8l",
        "riscv64", "ppc64le", "s390x", "loongarch64",
    )
}  # fmt: skip
_MACHINE = platform.machine().lower()


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def openat2(dirfd: int, path: str, flags: int, resolve: int) -> int:
    libc = _libc()
    nr = _OPENAT2_NR.get(_MACHINE) if sys.platform.startswith("linux") else None
    if libc is None or nr is None:
        raise OSError(errno.ENOSYS, "openat2 is not available")
    how = _OpenHow(flags, 0, resolve)
    fd = libc.syscall(
        ctypes.c_long(nr),
        ctypes.c_int(dirfd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return int(fd)


@cache
def openat2_available() -> bool:
    """True if openat2(2) with RESOLVE_BENEATH works here (not blocked by seccomp)."""
    if not sys.platform.startswith("linux") or not O_PATH:
        return False
    try:
        base = os.open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
    except OSError:
        return False
    try:
        os.close(openat2(base, ".", O_PATH | O_CLOEXEC, RESOLVE_BENEATH))
        return True
    except OSError:  # ENOSYS (old kernel), EPERM (seccomp), E2BIG/EINVAL (odd kernels)
        return False
    finally:
        os.close(base)


def renameat2_noreplace(dirfd: int, src: str, dst: str, dst_dirfd: int | None = None) -> bool:
    """Rename without ever replacing `dst`; False when the system or file system lacks it.

    Linux renameat2(RENAME_NOREPLACE), else macOS renameatx_np(RENAME_EXCL). `dst` is
    relative to `dst_dirfd` (default: the same directory as `src`).
    """
    libc = _libc()
    func = getattr(libc, "renameat2", None) if libc is not None else None
    flag = _RENAME_NOREPLACE
    if func is None and libc is not None:
        func, flag = getattr(libc, "renameatx_np", None), _RENAME_EXCL
    if func is None:
        return False
    res = func(
        ctypes.c_int(dirfd),
        ctypes.c_char_p(os.fsencode(src)),
        ctypes.c_int(dirfd if dst_dirfd is None else dst_dirfd),
        ctypes.c_char_p(os.fsencode(dst)),
        ctypes.c_uint(flag),
    )
    if res == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        # EINVAL is also "directory into itself"; the caller's fallback rename says so.
        return False
    raise OSError(err, os.strerror(err), dst)


def rename_exchange(a: str, b: str, dirfd: int | None = None) -> bool:
    """Swap two existing entries in one step (Linux RENAME_EXCHANGE, macOS RENAME_SWAP):
    no moment exists where either name is missing. Names are relative to `dirfd` (None:
    the working directory). False when unsupported here."""
    libc = _libc()
    if libc is None:
        return False
    func = getattr(libc, "renameat2", None)
    at = _AT_FDCWD if dirfd is None else dirfd
    if func is None:
        func = getattr(libc, "renameatx_np", None)
        at = -2 if dirfd is None else dirfd  # macOS AT_FDCWD
    if func is None:
        return False
    res = func(
        ctypes.c_int(at),
        ctypes.c_char_p(os.fsencode(a)),
        ctypes.c_int(at),
        ctypes.c_char_p(os.fsencode(b)),
        ctypes.c_uint(_RENAME_EXCHANGE),
    )
    if res == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def fd_path(fd: int) -> str | None:
    """The kernel's name for an open directory, or None if it cannot say."""
    try:
        name = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return name if name.startswith("/") and not name.endswith(" (deleted)") else None
