"""'Allow always' for commands: the exact command, or a prefix pattern the person picks."""

from __future__ import annotations

import json
import os
from pathlib import Path

from local_tools.interact.base import PermissionRequest
from local_tools.interact.terminal import TerminalAsker, render_request
from local_tools.security.approvals import ApprovalStore
from local_tools.security.policy import Policy
from policy_calls import ScriptedAsker, action, authorize, denied


def _policy(tmp_path: Path) -> Policy:
    return Policy(approvals=ApprovalStore(tmp_path / "approvals.json"))


def test_always_approves_the_exact_command_only(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    asker = ScriptedAsker("always")
    authorize(policy, "execute:command", ["npm test --watch"], asker)
    assert asker.requests[0].suggestion == "npm test *"
    assert action(policy, "execute:command", "npm test --watch") == "allow"
    assert action(policy, "execute:command", "npm test --ci") == "ask"


def test_pattern_approves_the_suggested_prefix_and_persists(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    authorize(policy, "execute:command", ["npm test --watch"], ScriptedAsker("pattern"))
    assert action(policy, "execute:command", "npm test --ci") == "allow"
    assert action(policy, "execute:command", "npm test") == "allow"
    assert action(policy, "execute:command", "npm publish") == "ask"
    saved = json.loads((tmp_path / "approvals.json").read_text())["approvals"]
    assert saved[0]["subject"] == "npm test *"
    assert saved[0]["pattern"] is True
    # A new process reads the pattern back as a pattern.
    again = _policy(tmp_path)
    assert action(again, "execute:command", "npm test --ci") == "allow"


def test_no_pattern_is_offered_for_destructive_or_single_word_commands(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    asker = ScriptedAsker("pattern", "pattern")
    # Approving `ls && rm x` must never install `rm *`: rm is exact-only, so a
    # "pattern" answer without a suggestion is a refusal.
    denied(policy, "execute:command", ["rm x"], asker=asker)
    assert asker.requests[0].suggestion is None
    assert action(policy, "execute:command", "rm y") == "ask"


def test_a_literal_approval_is_not_read_as_a_pattern(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    authorize(policy, "execute:command", ["make build-*"], ScriptedAsker("always"))
    assert action(policy, "execute:command", "make build-*") == "allow"
    assert action(policy, "execute:command", "make build-all") == "ask"


def test_terminal_offers_the_pattern(tmp_path: Path) -> None:
    request = PermissionRequest(
        "exec_cmd", "execute:command", "npm test --watch", "alice", suggestion="npm test *"
    )
    assert "[p]attern npm test *" in render_request(request)
    plain = PermissionRequest("exec_cmd", "execute:command", "rm x", "alice")
    assert "[p]attern" not in render_request(plain)
    r, w = os.pipe()
    with (
        os.fdopen(r, "r") as answers_in,
        os.fdopen(w, "w") as answers,
        open(os.devnull, "w") as sink,
    ):
        answers.write("p\np\n")
        answers.flush()
        asker = TerminalAsker(answers_in, sink)
        assert asker._ask_blocking(request) == "pattern"
        assert asker._ask_blocking(plain) == "deny"  # no pattern offered: not a yes
