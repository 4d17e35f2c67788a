"""The servers' bearer token: made once per state dir, private, overridable, checked."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from local_tools.security.server_token import (
    TOKEN_VARIABLE,
    TokenSource,
    bearer_ok,
    ensure_token,
    rotate_token,
    server_token,
)


def test_made_once_private_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    first = server_token(tmp_path / "state")
    assert len(first) >= 40
    path = tmp_path / "state" / "server-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert server_token(tmp_path / "state") == first  # a configured client keeps working
    assert server_token(tmp_path / "other") != first


def test_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, "from-env")
    assert server_token(tmp_path) == "from-env"
    assert not (tmp_path / "server-token").exists()


def test_made_now_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    token, made = ensure_token(tmp_path)
    assert made
    assert ensure_token(tmp_path) == (token, False)


def test_rotation_reaches_a_running_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    source = TokenSource(tmp_path)
    old = source.current()
    new = rotate_token(tmp_path)
    assert new != old and source.current() == new
    assert stat.S_IMODE((tmp_path / "server-token").stat().st_mode) == 0o600
    (tmp_path / "server-token").unlink()  # removing the file is not rotating it
    assert source.current() == new
    monkeypatch.setenv(TOKEN_VARIABLE, "from-env")
    assert source.current() == "from-env"


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer secret", True),
        ("bearer secret", True),
        ("Bearer  secret ", True),
        ("Bearer other", False),
        ("Bearer ", False),
        ("Basic secret", False),
        ("secret", False),
        ("", False),
        (None, False),
    ],
)
def test_bearer_ok(header: str | None, ok: bool) -> None:
    assert bearer_ok(header, "secret") is ok
