"""A seccomp filter that keeps a sandboxed command off the host's Unix sockets.

A read-only bind of `/` does not stop `connect()` on a socket file: without this, a
command with `network = false` could still talk to /var/run/docker.sock, the D-Bus
buses or an ssh-agent — a way out of the sandbox. The filter makes
`socket(AF_UNIX, ...)` fail with EACCES; `socketpair()` (which asyncio, multiprocessing
and shells use between their own processes) stays allowed, as does every other
address family (the network namespace already isolates those).

The program is classic BPF, built here byte by byte (no libseccomp): x86_64 (and its
x32 ABI) and aarch64; on other architectures it allows everything, and
`unix_socket_filter()` returns None so callers can say the guard is missing.
"""

from __future__ import annotations

import contextlib
import os
import platform
import struct
import sys

__all__ = ["open_filter", "unix_socket_filter"]

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_EACCES = 0x00050000 | 13  # SECCOMP_RET_ERRNO | EACCES
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little-endian low word)
_AF_UNIX = 1
# (audit arch, socket syscall numbers)
_ARCHES = {
    "x86_64": (0xC000003E, (41, 0x40000000 | 41)),  # native and x32
    "aarch64": (0xC00000B7, (198,)),
}


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """The compiled filter (struct sock_filter[]), or None on an architecture we don't know."""
    machine = (machine or platform.machine()).lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if machine not in _ARCHES:
        return None
    arch, numbers = _ARCHES[machine]
    # Layout: 0 load arch; 1 arch matches?; 2 load nr; 3.. nr is socket?;
    # then load arg0; AF_UNIX?; allow; deny.
    check = 3 + len(numbers)
    allow, deny = check + 2, check + 3
    prog: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, allow - 2, arch),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    for i, nr in enumerate(numbers):
        here = 3 + i
        last = i == len(numbers) - 1
        prog.append((_JEQ_K, check - here - 1, (allow - here - 1) if last else 0, nr))
    prog += [
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ_K, deny - (check + 1) - 1, allow - (check + 1) - 1, _AF_UNIX),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_EACCES),
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


_memfd: int | None = None


def open_filter() -> int | None:
    """A fresh read-only fd on the filter for one bwrap `--seccomp FD` (it reads to EOF).

    The program lives in one memfd per process; each command opens it anew through
    /proc, so every bwrap reads from offset 0. None where there is no filter.
    """
    global _memfd
    program = unix_socket_filter()
    if not sys.platform.startswith("linux") or program is None or not hasattr(os, "memfd_create"):
        return None
    if _memfd is None:
        fd = os.memfd_create("local-tools-seccomp", os.MFD_CLOEXEC)
        os.write(fd, program)
        _memfd = fd
    with contextlib.suppress(OSError):
        return os.open(f"/proc/self/fd/{_memfd}", os.O_RDONLY | os.O_CLOEXEC)
    return None
