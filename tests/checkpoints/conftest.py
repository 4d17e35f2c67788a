"""Fixtures for the checkpoint tests: a toolbox whose asker approves, and a whole-tree
fingerprint (names, kinds, bytes, link targets, modes) to prove what a restore did."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox
from local_tools.interact.base import Answer, PermissionRequest

# kind, bytes or link target, permission bits
Fingerprint = dict[str, tuple[str, bytes, int]]


class ApprovingAsker:
    """A real Asker that approves every question once, and records them."""

    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.requests.append(request)
        return "once"


def fingerprint(root: Path, *, skip_git: bool = True) -> Fingerprint:
    """Every entry under root, never following a link."""
    out: Fingerprint = {}
    for here, dirs, files in os.walk(root):
        if skip_git and ".git" in dirs:
            dirs.remove(".git")
        for name in dirs + files:
            path = Path(here, name)
            rel = path.relative_to(root).as_posix()
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.fsencode(os.readlink(path)), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", b"", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


@pytest.fixture
def asker() -> ApprovingAsker:
    return ApprovingAsker()


@pytest.fixture
def cptb(make_toolbox: Any, asker: ApprovingAsker) -> Toolbox:
    """Checkpoints on (the default config), every permission question approved."""
    return make_toolbox(asker=asker)


@pytest.fixture
def tree() -> Callable[..., Fingerprint]:
    return fingerprint
