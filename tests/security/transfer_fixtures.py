"""Helpers shared by the jail test files (fixtures: conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from local_tools.security.jail import TEMP_PREFIX, openat2_available

__all__ = ["ENGINES", "posix", "temps", "tree"]

ENGINES = [
    pytest.param(
        "openat2",
        marks=pytest.mark.skipif(not openat2_available(), reason="openat2 unavailable"),
    ),
    "walk",
    "path",
]
posix = pytest.mark.skipif(os.name != "posix", reason="POSIX symlinks, modes and FIFOs")


def tree(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Everything under root, symlinks not followed."""
    out: dict[str, tuple[str, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", "")
            else:
                out[rel] = ("file", p.read_bytes())
    return out


def temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]
