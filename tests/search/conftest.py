"""Fixtures for the search engine tests: every ripgrep on this machine, and a real tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_tools.search.ripgrep import Ripgrep
from search.helpers import all_rgs, build_tree

RGS = all_rgs()


@pytest.fixture(params=RGS or [None], ids=lambda rg: f"rg{rg.version_text}" if rg else "no-rg")
def rg(request: pytest.FixtureRequest) -> Ripgrep:
    if request.param is None:
        pytest.skip("no ripgrep on this machine")
    return request.param


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("search-tree")
    return build_tree(base / "root", base / "outside")
