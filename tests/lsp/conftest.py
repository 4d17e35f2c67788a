"""Real language servers for the lsp tests: basedpyright (the dev extra, from PyPI) and
typescript-language-server (tests/lsp/node, installed by `make test`).

A test that needs one and cannot find it skips and says what installs it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from lsp_projects import PY_PROJECT, TS_PROJECT, write_tree

NODE_BIN = Path(__file__).parent / "node" / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def _servers_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned TypeScript server and this venv's basedpyright come first on PATH."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(NODE_BIN), str(VENV_BIN), os.environ["PATH"]]))


def _need(command: str, how: str) -> str:
    found = shutil.which(command, path=os.pathsep.join([str(NODE_BIN), str(VENV_BIN)]))
    if found is None:
        pytest.skip(f"{command} is not installed here ({how})")
    return found


@pytest.fixture
def pyright_server() -> str:
    return _need("basedpyright-langserver", "pip install -e '.[dev]' brings basedpyright")


@pytest.fixture
def ts_server() -> str:
    return _need("typescript-language-server", "make test runs npm ci in tests/lsp/node")


@pytest.fixture
def py_project(workspace: Path) -> Path:
    """A small two-module Python package in the workspace (type-clean)."""
    return write_tree(workspace, PY_PROJECT)


@pytest.fixture
def ts_project(workspace: Path) -> Path:
    """A small two-module TypeScript project in the workspace (type-clean)."""
    return write_tree(workspace, TS_PROJECT)
