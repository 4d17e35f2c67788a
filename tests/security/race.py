"""Racing the jail: a thread swaps folders (or files) for symlinks to the outside while
another runs jail operations, for the durability and transfer race tests."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from local_tools.security.jail import openat2_available

__all__ = ["INSIDE", "OUTSIDE", "RACE_ENGINES", "RACE_SECONDS", "race"]

RACE_SECONDS = 3.0
INSIDE = b"inside-content"
OUTSIDE = b"OUTSIDE-SECRET"
# The engines that resolve a path step by step from a held folder (not `path`).
RACE_ENGINES = [
    pytest.param(
        "openat2",
        marks=pytest.mark.skipif(not openat2_available(), reason="openat2 unavailable"),
    ),
    "walk",
]


def _swap_forever(
    pairs: Sequence[tuple[Path, Path]], stop: threading.Event, counter: list[int]
) -> None:
    """Exchange each pair's names in turn: renameat2(RENAME_EXCHANGE) where the file
    system has it (both names always exist), else four plain renames."""
    libc = ctypes.CDLL(None, use_errno=True)
    exchange = getattr(libc, "renameat2", None)
    while not stop.is_set():
        a, b = pairs[counter[0] % len(pairs)]
        if exchange is not None and exchange(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0:
            counter[0] += 1
            continue
        exchange = None  # unsupported here
        parked = a.parent / "parked"
        os.rename(a, parked)
        os.rename(b, a)
        os.rename(a, b)
        os.rename(parked, a)
        counter[0] += 1


def race(pairs: Sequence[tuple[Path, Path]], step: Callable[[int], None]) -> int:
    """Run `step(1)`, `step(2)`, ... against the swapping for RACE_SECONDS; the swaps made.

    An exception in `step` stops nothing but is raised here afterwards.
    """
    stop = threading.Event()
    swaps = [0]
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            i = 0
            while not stop.is_set():
                i += 1
                step(i)
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    swapper = threading.Thread(target=_swap_forever, args=(pairs, stop, swaps))
    work = threading.Thread(target=worker)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the two threads as finely as possible
    try:
        swapper.start()
        work.start()
        time.sleep(RACE_SECONDS)
    finally:
        stop.set()
        swapper.join()
        work.join()
        sys.setswitchinterval(old_interval)
    if errors:
        raise errors[0]
    return swaps[0]
