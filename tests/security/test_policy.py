"""The permission engine: rule order, defaults, asking, and remembered approvals."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
from pathlib import Path

import pytest

from local_tools.core.config import load_config
from local_tools.core.errors import PermissionDenied
from local_tools.interact.base import PermissionRequest
from local_tools.security.approvals import ApprovalStore
from local_tools.security.policy import Decision, Policy, check_permission
from policy_calls import BrokenAsker, ScriptedAsker, action, authorize, denied

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


# --- rule order --------------------------------------------------------------------


def test_last_matching_rule_wins() -> None:
    policy = Policy({"execute:command": {"*": "allow", "rm *": "deny", "rm -i *": "allow"}})
    assert action(policy, "execute:command", "rm -rf x") == "deny"
    assert action(policy, "execute:command", "rm -i x") == "allow"
    assert action(policy, "execute:command", "make") == "allow"


def test_rule_order_is_the_order_written() -> None:
    policy = Policy({"execute:command": {"rm -i *": "allow", "rm *": "deny"}})
    assert action(policy, "execute:command", "rm -i x") == "deny"


def test_plain_action_means_star() -> None:
    policy = Policy({"delete:file": "allow"})
    decision = policy.evaluate("alice", "delete:file", "any/file.txt")
    assert decision == Decision(
        "allow", "delete:file", "any/file.txt", '[permissions] "delete:file" = "allow" (config)'
    )
    assert action(policy, "delete:file", None) == "allow"


def test_config_rules_come_after_defaults() -> None:
    policy = Policy({"read:file": {"*": "deny"}, "execute:command": {"git push *": "allow"}})
    assert action(policy, "read:file", "src/a.py") == "deny"
    assert action(policy, "execute:command", "git push origin main") == "allow"
    assert action(policy, "execute:command", "ls") == "allow"  # defaults still apply


def test_user_rules_override_config() -> None:
    policy = Policy(
        {"execute:command": {"*": "allow"}},
        users={"alice": {"execute:command": "deny"}, "carol": {"execute:command": {"ls *": "ask"}}},
    )
    assert action(policy, "execute:command", "ls", user="alice") == "deny"
    assert action(policy, "execute:command", "make", user="bob") == "allow"
    assert action(policy, "execute:command", "ls -l", user="carol") == "ask"
    assert action(policy, "execute:command", "make", user="carol") == "allow"
    rule = policy.evaluate("alice", "execute:command", "ls").rule
    assert rule == '[users.alice.permissions] "execute:command" = "deny" (config)'


def test_generic_check_matches_only_star_rules() -> None:
    policy = Policy({"delete:file": {"notes/*": "allow"}})
    assert action(policy, "delete:file", None) == "ask"
    policy = Policy({"delete:file": {"*": "deny", "notes/*": "allow"}})
    assert action(policy, "delete:file", None) == "deny"
    assert action(policy, "delete:file", "notes/a.md") == "allow"


def test_unknown_permission_asks() -> None:
    decision = Policy().evaluate("alice", "deploy:site", "prod")
    assert decision.action == "ask"
    assert "no rule" in decision.rule


def test_from_config_names_the_file_in_rules(tmp_path: Path) -> None:
    path = tmp_path / "local-tools.toml"
    path.write_text(
        '[permissions]\n"execute:command" = { "rm -rf *" = "deny" }\n'
        '[users.bob.permissions]\n"read:file" = "deny"\n',
        encoding="utf-8",
    )
    policy = Policy.from_config(load_config(path, tmp_path))
    decision = policy.evaluate("alice", "execute:command", "rm -rf /")
    assert decision.action == "deny"
    assert decision.rule == f'[permissions] "execute:command" = {{ "rm -rf *" = "deny" }} ({path})'
    assert action(policy, "read:file", "a.txt", user="bob") == "deny"
    assert action(policy, "read:file", "a.txt", user="alice") == "allow"


def test_direct_rules_are_validated() -> None:
    with pytest.raises(ValueError, match="action must be 'allow', 'deny' or 'ask'"):
        Policy({"read:file": {"*": "maybe"}})


def test_decision_is_frozen() -> None:
    decision = Policy().evaluate("alice", "read:file", "a.txt")
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.action = "deny"  # type: ignore[misc]


# --- built-in defaults -------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la src",
        "pwd",
        "echo hello",
        "cat README.md",
        "head -n 5 a.txt",
        "tail a.txt",
        "wc -l a.txt",
        "which python",
        "whoami",
        "date",
        "date +%Y-%m-%d",
        "git status",
        "git status --short",
        "git log --oneline -5",
        "git diff HEAD~1",
        "git show HEAD",
        "git branch",
        "git branch -a",
        "rg TODO src",
        "grep -rn TODO .",
    ],
)
def test_read_only_commands_are_allowed_by_default(command: str) -> None:
    assert action(Policy(), "execute:command", command) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "lsblk",
        "python script.py",
        "find . -delete",
        "git push origin main",
        "git commit -m wip",
        "git branch -D main",
        "git -c core.fsmonitor=evil status",
        "git diff --output=/tmp/x",
        "git log --output x",
        "rg --pre ./evil.sh TODO",
        "echo hi > notes.txt",
        "cat .env",
        "grep KEY config/.env.local",
        "date -s 2020-01-01",
        "date +%s -s 2020-01-01",
        "curl https://example.com",
        "/bin/ls",
    ],
)
def test_other_commands_ask_by_default(command: str) -> None:
    assert action(Policy(), "execute:command", command) == "ask"


@pytest.mark.parametrize(
    ("permission", "subject", "expected"),
    [
        ("read:file", "src/app.py", "allow"),
        ("read:file", ".env", "ask"),
        ("read:file", ".env.local", "ask"),
        ("read:file", "config/.env", "ask"),
        ("read:file", "config/.env.production", "ask"),
        ("read:file", "prod.env", "ask"),
        ("read:file", "./.env", "ask"),
        ("read:file", ".env.example", "allow"),
        ("read:file", "app/.env.sample", "allow"),
        ("read:file", ".env.template", "allow"),
        ("read:file", "docs/environment.md", "allow"),
        ("write:file", "src/app.py", "allow"),
        ("write:file", ".git/config", "ask"),
        ("write:file", "vendor/lib/.git/hooks/pre-commit", "ask"),
        ("write:file", "local-tools.toml", "ask"),
        ("write:file", ".local-tools/tools/evil.py", "ask"),
        ("write:file", "docs/local-tools.toml.md", "allow"),
        ("delete:file", "tmp.txt", "ask"),
        ("network:outbound", "example.com", "ask"),
        ("read:file", None, "allow"),
        ("write:file", None, "allow"),
        ("delete:file", None, "ask"),
        ("execute:command", None, "ask"),
        ("network:outbound", None, "ask"),
    ],
)
def test_file_and_network_defaults(permission: str, subject: str | None, expected: str) -> None:
    assert action(Policy(), permission, subject) == expected


def test_default_rule_description() -> None:
    decision = Policy().evaluate("alice", "delete:file", "a.txt")
    assert decision.rule == '[permissions] "delete:file" = { "*" = "ask" } (default)'


def test_check_permission() -> None:
    assert check_permission("alice", "read:file") is True
    assert check_permission("alice", "delete:file") is True  # ask is not a refusal
    policy = Policy({"delete:file": "deny"}, users={"bob": {"read:file": "deny"}})
    assert policy.check_permission("alice", "delete:file") is False
    assert policy.check_permission("bob", "read:file") is False
    assert policy.check_permission("alice", "read:file") is True


def test_check_decides_without_asking() -> None:
    """The runner's worker-thread half of authorize: deny raises, ask is returned."""
    policy = Policy({"test:x": {"*": "ask", "ok*": "allow", "no*": "deny"}})
    assert policy.check("alice", "test:x", ["ok1", "ok2"], tool="t") == []
    pending = policy.check("alice", "test:x", ["ok1", "maybe", "maybe", Path("why")], tool="t")
    assert [d.subject for d in pending] == ["maybe", "why"]  # deduplicated, as text
    assert [d.action for d in pending] == ["ask", "ask"]
    with pytest.raises(PermissionDenied, match=r"no\*"):
        policy.check("alice", "test:x", ["maybe", "nope"], tool="t")  # deny beats ask
    assert [d.subject for d in policy.check("alice", "test:x", None, tool="t")] == [None]


# --- authorize ---------------------------------------------------------------------


def test_allowed_calls_do_not_ask() -> None:
    asker = ScriptedAsker()
    authorize(Policy(), "read:file", ["src/a.py", "README.md"], asker)
    authorize(Policy(), "read:file", None, asker)
    assert asker.requests == []


def test_deny_names_the_rule_and_asks_nobody(tmp_path: Path) -> None:
    path = tmp_path / "local-tools.toml"
    path.write_text('[permissions]\n"execute:command" = { "rm -rf *" = "deny" }\n', "utf-8")
    policy = Policy.from_config(load_config(path, tmp_path))
    asker = ScriptedAsker("once")
    message = denied(policy, "execute:command", ["make", "rm -rf /"], asker=asker)
    assert '"execute:command" = { "rm -rf *" = "deny" }' in message
    assert str(path) in message
    assert "rm -rf /" in message
    assert "local-tools.toml" in message
    assert asker.requests == []


def test_ask_without_asker_suggests_the_toml_to_add() -> None:
    message = denied(Policy(), "delete:file", ["notes/a.txt"])
    assert '"delete:file" for "notes/a.txt"' in message
    assert 'Add to local-tools.toml: [permissions] "delete:file" = { "notes/*" = "allow" }' in (
        message
    )


def _suggested_toml(message: str) -> dict[str, object]:
    found = re.search(
        r"Add to local-tools\.toml: (\[[^\]]+\]) (.+?)(?: \(in place of [^)]*\))? —", message
    )
    assert found, message
    return tomllib.loads(f"{found.group(1)}\n{found.group(2)}\n")


@pytest.mark.parametrize(
    ("permission", "subjects"),
    [
        ("delete:file", ["notes/a.txt", "b.txt"]),
        ("read:file", ["config/.env"]),
        ("execute:command", ["git push origin main"]),
        ("execute:command", ["rm -rf build"]),
        ("network:outbound", ["pypi.org"]),
        ("delete:file", None),
    ],
)
def test_the_suggestion_is_valid_toml_that_allows_the_call(
    permission: str, subjects: list[str] | None
) -> None:
    data = _suggested_toml(denied(Policy(), permission, subjects))
    authorize(Policy(data["permissions"]), permission, subjects)  # type: ignore[arg-type]


def test_suggestion_goes_to_the_users_section_when_their_rule_asks() -> None:
    config = {"execute:command": {"*": "allow"}}
    policy = Policy(config, users={"alice": {"execute:command": "ask"}})
    message = denied(policy, "execute:command", ["make"])
    assert '(in place of the existing "execute:command" entry)' in message
    data = _suggested_toml(message)
    user_rules = data["users"]["alice"]["permissions"]  # type: ignore[index]
    # merged with the rule already there, which TOML would not let us repeat
    assert user_rules == {"execute:command": {"*": "ask", "make": "allow"}}
    authorize(Policy(config, users={"alice": user_rules}), "execute:command", ["make"])
    denied(Policy(config, users={"alice": user_rules}), "execute:command", ["make x"])


def test_suggestion_merges_with_an_existing_table() -> None:
    existing = {"delete:file": {"notes/*": "ask", "build/*": "allow"}}
    message = denied(Policy(existing), "delete:file", ["notes/a.md"])
    rules = _suggested_toml(message)["permissions"]
    assert rules == {"delete:file": {"build/*": "allow", "notes/*": "allow"}}
    assert list(rules["delete:file"]) == ["build/*", "notes/*"]  # type: ignore[index]
    authorize(Policy(rules), "delete:file", ["notes/a.md"])  # type: ignore[arg-type]


def test_asker_once_allows_this_call_only() -> None:
    policy = Policy()
    asker = ScriptedAsker("once", "once", "once")
    authorize(policy, "delete:file", ["a.txt", "b.txt", "a.txt"], asker)
    assert [r.subject for r in asker.requests] == ["a.txt", "b.txt"]  # once per subject
    authorize(policy, "delete:file", ["a.txt"], asker)
    assert len(asker.requests) == 3  # "once" is not remembered
    assert policy.approvals.entries() == []


def test_asker_is_asked_only_about_subjects_that_ask() -> None:
    asker = ScriptedAsker("once")
    authorize(Policy(), "read:file", ["src/a.py", ".env"], asker)
    assert [r.subject for r in asker.requests] == [".env"]


def test_the_request_carries_the_call() -> None:
    asker = ScriptedAsker("once")
    authorize(Policy(), "network:outbound", ["pypi.org"], asker, user="bob")
    assert asker.requests == [
        PermissionRequest("some_tool", "network:outbound", "pypi.org", "bob", "why")
    ]


@pytest.mark.parametrize("answer", ["deny", "no", "", "ALWAYS"])
def test_asker_deny_or_nonsense_is_declined(answer: str) -> None:
    policy = Policy()
    message = denied(policy, "delete:file", ["a.txt"], asker=ScriptedAsker(answer))
    assert "declined" in message
    assert policy.approvals.entries() == []


def test_a_broken_asker_denies() -> None:
    message = denied(Policy(), "delete:file", ["a.txt"], asker=BrokenAsker())
    assert "the web page went away" in message


def test_always_is_remembered_and_persisted(tmp_path: Path) -> None:
    path = tmp_path / "state" / "approvals.json"
    policy = Policy(approvals=ApprovalStore(path))
    asker = ScriptedAsker("always")
    authorize(policy, "delete:file", ["notes/a.txt"], asker)
    authorize(policy, "delete:file", ["notes/a.txt"], asker)  # not asked again
    assert len(asker.requests) == 1
    assert json.loads(path.read_text("utf-8"))["approvals"][0]["subject"] == "notes/a.txt"

    restarted = Policy(approvals=ApprovalStore(path))
    decision = restarted.evaluate("alice", "delete:file", "notes/a.txt")
    assert decision.action == "allow"
    assert "allow always" in decision.rule
    assert str(path) in decision.rule
    assert action(restarted, "delete:file", "notes/b.txt") == "ask"
    assert action(restarted, "delete:file", "notes/a.txt", user="bob") == "ask"


def test_always_approves_the_literal_subject_only() -> None:
    policy = Policy()
    authorize(policy, "execute:command", ["python *.py"], ScriptedAsker("always"))
    assert action(policy, "execute:command", "python *.py") == "allow"
    assert action(policy, "execute:command", "python evil.py") == "ask"


def test_always_for_the_whole_permission() -> None:
    policy = Policy()
    authorize(policy, "network:outbound", None, ScriptedAsker("always"))
    assert action(policy, "network:outbound", None) == "allow"
    assert action(policy, "network:outbound", "example.com") == "allow"


def test_approvals_do_not_override_a_later_deny_check_order() -> None:
    # Approvals come after config, so an approval lifts a config "ask"...
    policy = Policy({"delete:file": {"*": "ask"}})
    authorize(policy, "delete:file", ["a.txt"], ScriptedAsker("always"))
    assert action(policy, "delete:file", "a.txt") == "allow"
    # ...but a denied subject is refused before anyone is asked.
    policy = Policy({"delete:file": {"secret/*": "deny"}})
    asker = ScriptedAsker("always")
    denied(policy, "delete:file", ["a.txt", "secret/k"], asker=asker)
    assert asker.requests == []


def test_always_still_allows_when_the_store_cannot_be_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", "utf-8")
    policy = Policy(approvals=ApprovalStore(blocker / "approvals.json"))
    with caplog.at_level(logging.WARNING, logger="local_tools.security.policy"):
        authorize(policy, "delete:file", ["a.txt"], ScriptedAsker("always"))
    assert action(policy, "delete:file", "a.txt") == "allow"
    assert "could not save approvals" in caplog.text


# --- many subjects at once -----------------------------------------------------------


SUBJECTS = [".env", "a/.env", "x.env.example", "src/a.py", "private/k", "private", "README"]


@pytest.mark.parametrize(
    "rules",
    [
        {"*": "allow"},
        {"*": "allow", "private/*": "deny"},
        {"*": "ask", "src/*": "allow"},
        {"*": "deny"},
    ],
)
@pytest.mark.parametrize("keep", [("allow",), ("allow", "ask")])
def test_subject_filter_agrees_with_evaluate(rules: dict[str, str], keep: tuple[str, ...]) -> None:
    policy = Policy({"read:file": rules})
    test = policy.subject_filter("u", "read:file", keep)  # type: ignore[arg-type]
    expected = [policy.evaluate("u", "read:file", s).action in keep for s in SUBJECTS]
    if test is None:  # no check needed: then every subject must pass
        assert all(expected)
    else:
        assert [test(s) for s in SUBJECTS] == expected


def test_subject_filter_is_none_only_when_nothing_can_be_held_back() -> None:
    plain = Policy({"read:file": {"*": "allow"}})
    # The built-in .env protection asks, so "allow only" needs a check, "not denied" not.
    assert plain.subject_filter("u", "read:file", ("allow", "ask")) is None
    assert plain.subject_filter("u", "read:file", ("allow",)) is not None
    denying = Policy({"read:file": {"*": "allow", "secret/*": "deny"}})
    assert denying.subject_filter("u", "read:file", ("allow", "ask")) is not None
