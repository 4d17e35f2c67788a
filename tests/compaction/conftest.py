"""A toolbox (the compact tool is a builtin), closed after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox

MakeToolbox = Callable[..., Toolbox]


@pytest.fixture
def make_toolbox(workspace: Path) -> Iterator[MakeToolbox]:
    made: list[Toolbox] = []

    def make(config: dict[str, Any] | None = None) -> Toolbox:
        tb = Toolbox(workspace, config)
        made.append(tb)
        return tb

    yield make
    for tb in made:
        tb.close()
