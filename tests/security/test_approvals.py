"""The approval store: "allow always" answers persisted as JSON, and read back safely."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from local_tools.security.approvals import ApprovalStore
from local_tools.security.policy import Policy
from policy_calls import ScriptedAsker, action, authorize


def test_store_writes_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "approvals.json"
    store = ApprovalStore(path)
    store.approve("alice", "delete:file", "a.txt")
    store.approve("alice", "delete:file", "a.txt")  # idempotent
    store.approve("bob", "execute:command", None)
    assert sorted(p.name for p in path.parent.iterdir()) == ["approvals.json"]
    data = json.loads(path.read_text("utf-8"))
    assert data["version"] == 1
    assert [(a["user_id"], a["subject"]) for a in data["approvals"]] == [
        ("alice", "a.txt"),
        ("bob", None),
    ]
    assert ApprovalStore(path).users() == {"alice", "bob"}


def test_store_merges_approvals_from_another_process(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    first, second = ApprovalStore(path), ApprovalStore(path)
    first.approve("alice", "delete:file", "a.txt")
    second.approve("alice", "delete:file", "b.txt")
    assert {a.subject for a in ApprovalStore(path).entries()} == {"a.txt", "b.txt"}


def test_revoke(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    policy = Policy(approvals=ApprovalStore(path))
    authorize(policy, "delete:file", ["a.txt"], ScriptedAsker("always"))
    assert policy.approvals.revoke("alice", "delete:file", "a.txt") is True
    assert policy.approvals.revoke("alice", "delete:file", "a.txt") is False
    assert action(policy, "delete:file", "a.txt") == "ask"
    assert ApprovalStore(path).entries() == []


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2, 3]",
        '{"approvals": "nope"}',
        "\xff\xfe garbage",
    ],
)
def test_corrupt_store_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str
) -> None:
    path = tmp_path / "approvals.json"
    path.write_text(content, encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="local_tools.security.policy"):
        store = ApprovalStore(path)
    assert store.entries() == []
    assert "approvals" in caplog.text
    assert str(path) in caplog.text
    # and it recovers: the next approval writes a valid file
    policy = Policy(approvals=store)
    authorize(policy, "delete:file", ["a.txt"], ScriptedAsker("always"))
    assert ApprovalStore(path).for_user("alice")[0].subject == "a.txt"


def test_malformed_entries_are_skipped_and_good_ones_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "approvals.json"
    good = {"user_id": "alice", "permission": "delete:file", "subject": "a.txt"}
    path.write_text(json.dumps({"approvals": [good, {"user_id": 3}, "x"]}), "utf-8")
    with caplog.at_level(logging.WARNING, logger="local_tools.security.policy"):
        policy = Policy(approvals=ApprovalStore(path))
    assert action(policy, "delete:file", "a.txt") == "allow"
    assert caplog.text.count("malformed approval") == 2


def test_in_memory_store() -> None:
    store = ApprovalStore(None)
    store.approve("alice", "delete:file", "a.txt")
    assert [a.subject for a in store.for_user("alice")] == ["a.txt"]
    assert store.path is None
