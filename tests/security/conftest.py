"""Fixtures for the jail tests: every resolution engine, and a tree with links inside
and out. Test files that need a different tree define their own `base`/`jail`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from local_tools.security.jail import Jail
from security.transfer_fixtures import ENGINES


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    b = Path(os.path.realpath(tmp_path)) / "j"
    (b / "ws" / "src" / "sub").mkdir(parents=True)
    (b / "outside").mkdir()
    (b / "outside" / "secret.txt").write_bytes(b"OUTSIDE-SECRET")
    ws = b / "ws"
    (ws / "a.txt").write_bytes(b"a")
    (ws / "src" / "one.txt").write_bytes(b"one")
    (ws / "src" / ".hidden").write_bytes(b"h")
    (ws / "src" / "sub" / "two.txt").write_bytes(b"two")
    os.symlink("../one.txt", ws / "src" / "sub" / "rel_link")
    os.symlink(b / "outside", ws / "src" / "out_link")
    os.symlink(b / "outside" / "missing", ws / "src" / "dangling")
    return b


@pytest.fixture
def jail(base: Path, engine: str) -> Jail:
    return Jail(base / "ws", engine=engine)  # type: ignore[arg-type]
