"""The answers to "does a rule lift this protected path?" are kept between commands
(looked up two or three times per command): an approval given meanwhile must count
from the next command on, as the policy's own rules do."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")

WRITE_PLUGIN = "mkdir -p .local-tools/tools && echo x > .local-tools/tools/t.py"


def test_an_approval_given_between_commands_lifts_the_protection_next_time(
    make_toolbox: Any, workspace: Path
) -> None:
    tb = make_toolbox({"permissions": {"execute:command": "allow"}, "sandbox": {"mode": "off"}})
    first = ok(tb.run("exec_cmd", {"command": WRITE_PLUGIN}))
    assert not os.path.lexists(workspace / ".local-tools" / "tools" / "t.py")
    assert ".local-tools" in first["protected_note"]
    tb.policy.approvals.approve("default", "write:file", ".local-tools/*")
    second = ok(tb.run("exec_cmd", {"command": WRITE_PLUGIN}))
    assert (workspace / ".local-tools" / "tools" / "t.py").read_text() == "x\n"
    assert "protected_note" not in second
    tb.policy.approvals.revoke("default", "write:file", ".local-tools/*")
    ok(tb.run("exec_cmd", {"command": "echo y > .local-tools/tools/u.py"}))
    assert not os.path.lexists(workspace / ".local-tools" / "tools" / "u.py")
