"""build_environment keeps the host's allow-listed part between commands: a change
to os.environ must still show in the very next command's environment."""

from __future__ import annotations

import pytest

from local_tools.shell.environment import build_environment


def test_a_change_to_the_environment_is_seen_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    assert build_environment({})["LANG"] == "C.UTF-8"
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    assert build_environment({})["LANG"] == "de_DE.UTF-8"
    monkeypatch.setenv("LC_TIME", "en_GB.UTF-8")
    assert build_environment({})["LC_TIME"] == "en_GB.UTF-8"
    monkeypatch.delenv("LC_TIME")
    assert "LC_TIME" not in build_environment({})
    monkeypatch.setenv("LOCAL_TOOLS_TEST_SECRET", "x")
    assert "LOCAL_TOOLS_TEST_SECRET" not in build_environment({})


def test_each_command_gets_its_own_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    first = build_environment({"EXTRA": "1"})
    first["LANG"] = "changed by the caller"
    second = build_environment({})
    assert second["LANG"] == "C.UTF-8"
    assert "EXTRA" not in second
    assert second["CI"] == "true"


def test_a_given_host_mapping_is_used_as_given() -> None:
    env = build_environment({}, host={"PATH": "/x", "HOME": "/h", "AWS_SECRET": "s"})
    assert env["PATH"] == "/x" and env["HOME"] == "/h"
    assert "AWS_SECRET" not in env
