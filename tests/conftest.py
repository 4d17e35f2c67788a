"""Shared fixtures: a real workspace folder and a real state dir per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox
from local_tools.core.runner import Runner
from local_tools.core.state import STATE_DIR_ENV


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the real user state dir or config from a test."""
    state = tmp_path / "state"
    monkeypatch.setenv(STATE_DIR_ENV, str(state))
    monkeypatch.delenv("LOCAL_TOOLS_CONFIG", raising=False)
    return state


@pytest.fixture(autouse=True)
def _no_language_servers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside tests/lsp, calls that write a .py or .ts file do not start a language
    server to check it: those tests measure what they test, without a server's start-up
    in their timings or its report in their expected text. tests/lsp drives the real
    servers; tests that start local-tools in a subprocess get the check as users do."""
    if "lsp" in request.node.path.parts:
        return

    async def no_check(self: Runner, args: Any, ctx: Any, output: Any) -> None:
        return None

    monkeypatch.setattr(Runner, "_after_change", no_check)


@pytest.fixture(autouse=True)
def _no_checkpoints(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside tests/checkpoints (and tests marked `checkpoints`), calls that change files
    take no snapshot: the other tests measure their tool, not a git process beside it.
    tests/checkpoints drive every kind of changing call with checkpoints on; tests that
    start local-tools in a subprocess get them as users do."""
    if "checkpoints" in request.node.path.parts or request.node.get_closest_marker("checkpoints"):
        return

    def no_snapshot(self: Runner, tool: Any, args: Any, ctx: Any) -> None:
        return None

    monkeypatch.setattr(Runner, "_before", no_snapshot)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def make_toolbox(workspace: Path, tmp_path: Path) -> Iterator[Any]:
    made: list[Toolbox] = []

    def make(config: Any = None, **kwargs: Any) -> Toolbox:
        kwargs.setdefault("state_dir", tmp_path / "state")
        tb = Toolbox(kwargs.pop("workspace", workspace), config, **kwargs)
        made.append(tb)
        return tb

    yield make
    for tb in made:
        tb.close()


@pytest.fixture
def tb(make_toolbox: Any) -> Toolbox:
    return make_toolbox()
