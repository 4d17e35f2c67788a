"""Turning checkpoints back on in a test outside tests/checkpoints (tests/conftest.py
turns them off there): `checkpoints_on(monkeypatch)`."""

from __future__ import annotations

import pytest

from local_tools.core.runner import Runner

REAL_BEFORE = Runner._before


def checkpoints_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Runner, "_before", REAL_BEFORE)
