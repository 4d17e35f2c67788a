"""git_safety against real hostile repositories built with real git.

Every attack has a control that runs the same git command without the protection and
shows the attacker's program running (it touches a marker file outside the repository),
so a test that passes cannot be passing because the attack never worked.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from local_tools.shell import git_safety
from local_tools.shell.git_safety import (
    git_environment,
    repository_runs_code,
    scrub_git_variables,
)

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)

# The commands a caller may auto-allow, and a piece of the output each must still give.
ALLOWED = {
    "git status": "a.txt",
    "git diff": "+HELLO",
    "git log -p": "+hello",
    "git show": "+hello",
    "git diff --stat": "a.txt",
    "git branch": "main",
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user whose own git config is known, and no GIT_* variables from the test run."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in list(os.environ):
        if name.upper().startswith("GIT_"):
            monkeypatch.delenv(name)
    return home


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    """Set-up git, before the repository is armed."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


def run(
    cwd: Path, command: str, *, protected: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`bash -c command` as the shell tool would run it, with or without the protection."""
    base = dict(os.environ) | (env or {})
    full = scrub_git_variables(base) | git_environment(cwd) if protected else base
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def make_repo(path: Path, object_format: str = "sha1") -> Path:
    """A repository with one commit and a.txt modified to the same size (so status must
    read it, running its clean filter), .gitattributes naming the "evil" drivers."""
    path.mkdir(parents=True)
    git(path, "init", "-q", f"--object-format={object_format}")
    (path / "a.txt").write_text("hello\n")
    (path / ".gitattributes").write_text("a.txt diff=evil filter=evil merge=evil\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    modify(path / "a.txt", "HELLO\n")
    return path


def modify(path: Path, text: str) -> None:
    path.write_text(text)
    later = path.stat().st_mtime + 10  # the index's stat data no longer matches
    os.utime(path, (later, later))


def script(path: Path, marker: Path, tail: str = "exit 1") -> str:
    """An executable for the keys git runs without a shell."""
    path.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n{tail}\n")
    path.chmod(0o755)
    return str(path)


def configure(repo: Path, *pairs: str) -> None:
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        git(repo, "config", key, value)


def sign_head(repo: Path) -> None:
    """Replace HEAD by the same commit with a (bogus) signature, so git asks gpg."""
    raw = git(repo, "cat-file", "commit", "HEAD")
    head, _, message = raw.partition("\n\n")
    signature = "-----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----"
    signed = f"{head}\ngpgsig {signature}\n\n{message}"
    sha = git(repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=signed)
    git(repo, "update-ref", "HEAD", sha.strip())


# Each attack arms a repository made by make_repo (marker: the file it must not create)
# and names a command that shows it working unprotected.
Arm = Callable[[Path, Path], None]


def arm_fsmonitor(repo: Path, marker: Path) -> None:
    configure(repo, "core.fsmonitor", f"touch {marker}; false")


def arm_diff_external(repo: Path, marker: Path) -> None:
    configure(repo, "diff.external", f"touch {marker}; false")


def arm_textconv(repo: Path, marker: Path) -> None:
    configure(repo, "diff.evil.textconv", f"touch {marker}; cat")


def arm_diff_command(repo: Path, marker: Path) -> None:
    configure(repo, "diff.evil.command", f"touch {marker}; false")


def arm_filter_clean(repo: Path, marker: Path) -> None:
    configure(repo, "filter.evil.clean", f"touch {marker}; cat", "filter.evil.required", "true")


def arm_filter_process(repo: Path, marker: Path) -> None:
    configure(repo, "filter.evil.process", f"touch {marker}; false")


def arm_include(repo: Path, marker: Path) -> None:
    included = repo.parent / "included.cfg"  # outside the work tree, found relatively
    git(repo, "config", "-f", str(included), "diff.evil.textconv", f"touch {marker}; cat")
    git(repo, "config", "-f", str(included), "core.fsmonitor", f"touch {marker}; false")
    configure(repo, "include.path", "../../included.cfg")


def arm_include_if(repo: Path, marker: Path) -> None:
    included = repo.parent / "conditional.cfg"
    git(repo, "config", "-f", str(included), "filter.evil.process", f"touch {marker}; false")
    configure(repo, "includeIf.onbranch:main.path", str(included))


def arm_gpg(repo: Path, marker: Path) -> None:
    sign_head(repo)
    program = script(repo.parent / "gpg-evil", marker)
    configure(repo, "gpg.program", program, "log.showSignature", "true")


ATTACKS: dict[str, tuple[Arm, str]] = {
    "fsmonitor": (arm_fsmonitor, "git status"),
    "diff.external": (arm_diff_external, "git diff"),
    "textconv": (arm_textconv, "git log -p"),
    "diff command": (arm_diff_command, "git diff"),
    "filter clean": (arm_filter_clean, "git status"),
    "filter process": (arm_filter_process, "git diff --stat"),
    "include.path": (arm_include, "git diff"),
    "includeIf": (arm_include_if, "git status"),
    "gpg.program": (arm_gpg, "git show"),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_works_without_protection(attack: str, tmp_path: Path) -> None:
    arm, command = ATTACKS[attack]
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    arm(repo, marker)
    run(repo, command, protected=False)
    assert marker.exists()


@pytest.mark.parametrize("command", ALLOWED)
@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_neutralised(attack: str, command: str, tmp_path: Path) -> None:
    arm, _ = ATTACKS[attack]
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    arm(repo, marker)
    done = run(repo, command)
    assert not marker.exists()
    assert done.returncode == 0, done.stderr
    assert ALLOWED[command] in done.stdout


def test_the_stand_in_diff_is_a_real_diff(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    arm_diff_external(repo, tmp_path / "pwned")
    out = run(repo, "git diff").stdout
    assert out.splitlines()[:3] == ["diff --git a/a.txt b/a.txt", "--- a/a.txt", "+++ b/a.txt"]
    assert "-hello\n+HELLO" in out


def test_repository_in_a_parent_of_cwd(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    arm_textconv(repo, marker)
    arm_filter_process(repo, marker)
    cwd = repo / "src" / "deep"
    cwd.mkdir(parents=True)
    run(cwd, "git diff", protected=False)
    assert marker.exists()
    marker.unlink()
    for command, expected in ALLOWED.items():
        done = run(cwd, command)
        assert done.returncode == 0, (command, done.stderr)
        assert expected in done.stdout, command
    assert not marker.exists()


def test_worktree_reads_common_and_worktree_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    git(repo, "stash", "-q")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    wt = tmp_path / "wt"
    modify(wt / "a.txt", "HELLO\n")
    marker = tmp_path / "pwned"
    arm_textconv(repo, marker)  # the common config
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(wt, "config", "--worktree", "filter.evil.process", f"touch {marker}; false")
    run(wt, "git status", protected=False)
    assert marker.exists()
    marker.unlink()
    for command, expected in ALLOWED.items():
        done = run(wt, command)
        assert done.returncode == 0, (command, done.stderr)
        assert expected.replace("main", "side") in done.stdout, command
    assert not marker.exists()


def bare_repository_in_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A bare repository committed into a work tree, set up to run fsmonitor on status."""
    ws = make_repo(tmp_path / "ws")
    inner = ws / "vendor" / "inner.git"
    inner.parent.mkdir()
    git(inner.parent, "init", "-q", "--bare", "inner.git")
    marker = tmp_path / "pwned"
    configure(inner, "core.bare", "false", "core.worktree", "..")
    configure(inner, "core.fsmonitor", f"touch {marker}; false")
    return inner, marker


def test_bare_repository_in_tree_works_without_protection(tmp_path: Path) -> None:
    inner, marker = bare_repository_in_tree(tmp_path)
    run(inner, "git status", protected=False)
    assert marker.exists()


@pytest.mark.parametrize("command", ALLOWED)
def test_bare_repository_in_tree_is_refused(command: str, tmp_path: Path) -> None:
    inner, marker = bare_repository_in_tree(tmp_path)
    done = run(inner, command)
    assert not marker.exists()
    assert done.returncode != 0
    # git diff sets up gently and then finds no repository at all
    assert "cannot use bare repository" in done.stderr or "Not a git repository" in done.stderr


def inherited_variables(tmp_path: Path, marker: Path) -> dict[str, dict[str, str]]:
    elsewhere = make_repo(tmp_path / "elsewhere")
    arm_diff_external(elsewhere, marker)
    evil = f"touch {marker}; false"
    return {
        "GIT_DIR": {"GIT_DIR": str(elsewhere / ".git")},
        "GIT_CONFIG_PARAMETERS": {"GIT_CONFIG_PARAMETERS": f"'diff.external'='{evil}'"},
        "GIT_EXTERNAL_DIFF": {"GIT_EXTERNAL_DIFF": evil},
        "GIT_CONFIG_GLOBAL": {"GIT_CONFIG_GLOBAL": str(elsewhere / ".git" / "config")},
    }


@pytest.mark.parametrize(
    "variable", ["GIT_DIR", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_GLOBAL"]
)
def test_inherited_git_variables(variable: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    inherited = inherited_variables(tmp_path, marker)[variable]
    # git_environment alone is not enough: these beat or bypass its config.
    unscrubbed = dict(os.environ) | inherited | git_environment(repo)
    subprocess.run(["bash", "-c", "git diff"], cwd=repo, env=unscrubbed, capture_output=True)
    assert marker.exists()
    marker.unlink()
    done = run(repo, "git diff", env=inherited)
    assert not marker.exists()
    assert done.returncode == 0, done.stderr
    assert "+HELLO" in done.stdout


def test_scrub_git_variables() -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "GIT_DIR": "/x",
        "git_dir": "/x",
        "GIT_CONFIG_COUNT": "1",
        "GIT_SSH_COMMAND": "evil",
        "GIT_AUTHOR_NAME": "Ann",
        "GIT_COMMITTER_EMAIL": "a@b",
        "EDITOR": "vi",
    }
    assert scrub_git_variables(env) == {
        "PATH": "/bin",
        "HOME": "/h",
        "GIT_AUTHOR_NAME": "Ann",
        "GIT_COMMITTER_EMAIL": "a@b",
        "EDITOR": "vi",
    }


def config_pairs(env: dict[str, str]) -> list[tuple[str, str]]:
    count = int(env["GIT_CONFIG_COUNT"])
    return [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(count)]


def test_not_a_repository_gets_the_global_overrides_only(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = git_environment(plain)
    assert config_pairs(env) == [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
        ("safe.bareRepository", "explicit"),
        ("protocol.ext.allow", "never"),
    ]
    assert env["GIT_PAGER"] == "cat"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert repository_runs_code(plain) is None
    assert git_environment(tmp_path / "missing") == env


def test_an_ordinary_repository_is_not_flagged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    assert repository_runs_code(repo) is None
    assert len(config_pairs(git_environment(repo))) == 5


def test_user_values_replace_the_repository_ones(tmp_path: Path, home: Path) -> None:
    with (home / ".gitconfig").open("a") as f:
        f.write('[filter "lfs"]\n\tprocess = git-lfs filter-process\n\trequired\n')
        f.write("[core]\n\thooksPath = ~/hooks\n[credential]\n\thelper = store\n")
    repo = make_repo(tmp_path / "ws")
    configure(repo, "filter.lfs.process", "evil", "credential.helper", "evil")
    pairs = config_pairs(git_environment(repo))
    assert ("filter.lfs.process", "git-lfs filter-process") in pairs
    assert ("filter.lfs.clean", "") in pairs
    assert ("filter.lfs.required", "true") in pairs  # a bare key is a boolean true
    assert ("core.hooksPath", "~/hooks") in pairs
    # Emptied, then the user's helpers again (the system config may add its own).
    reset = pairs.index(("credential.helper", ""))
    assert ("credential.helper", "store") in pairs[reset:]
    assert ("credential.helper", "evil") not in pairs


# -- submodules: status and diff run git inside them, with their own config -------------


def nested_repository(tmp_path: Path, marker: Path, object_format: str) -> Path:
    """A super-project whose index has a gitlink to a repository with its own .git in the
    work tree (no .gitmodules), armed with a process filter."""
    top = make_repo(tmp_path / "ws", object_format)
    vendor = make_repo(top / "vendor", object_format)
    sha = git(vendor, "rev-parse", "HEAD").strip()
    git(top, "update-index", "--add", "--cacheinfo", f"160000,{sha},vendor")
    git(top, "commit", "-qm", "vendor")
    arm_filter_process(vendor, marker)
    return top


@pytest.mark.parametrize("index", ["v2", "v4", "split", "sha256"])
def test_nested_repository_in_the_index(index: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    top = nested_repository(tmp_path, marker, "sha256" if index == "sha256" else "sha1")
    if index == "v4":
        git(top, "update-index", "--index-version", "4")
    elif index == "split":
        git(top, "update-index", "--split-index")
        assert list((top / ".git").glob("sharedindex.*"))
    for command in ("git status", "git diff"):
        done = run(top, command)
        assert done.returncode == 0, done.stderr
        assert not marker.exists()
    run(top, "git status", protected=False)
    assert marker.exists()


def test_submodule(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    make_repo(tmp_path / "sub")
    git(tmp_path / "sub", "checkout", "-q", "--", "a.txt")
    top = make_repo(tmp_path / "ws")
    git(top, "submodule", "add", "-q", "../sub", "sub")
    git(top, "commit", "-qm", "sub")
    modify(top / "sub" / "a.txt", "HELLO\n")
    arm_filter_process(top / "sub", marker)  # into .git/modules/sub/config
    configure(top, "diff.submodule", "diff")
    for command in ALLOWED:
        done = run(top, command)
        assert done.returncode == 0, (command, done.stderr)
        assert not marker.exists()
    run(top, "git status", protected=False)
    assert marker.exists()


# -- commands beyond the read-only ones ------------------------------------------------

CREDENTIAL_FILL = "printf 'protocol=https\\nhost=example.com\\n\\n' | git credential fill"


def arm_credential_helper(repo: Path, marker: Path) -> str:
    configure(repo, "credential.helper", f"!touch {marker}; true")
    configure(repo, "credential.https://example.com.helper", f"!touch {marker}; true")
    return CREDENTIAL_FILL


def arm_askpass(repo: Path, marker: Path) -> str:
    configure(repo, "core.askPass", script(repo.parent / "askpass", marker, "echo x"))
    return CREDENTIAL_FILL


def arm_git_proxy(repo: Path, marker: Path) -> str:
    configure(repo, "core.gitProxy", script(repo.parent / "proxy", marker))
    return "git ls-remote git://127.0.0.1:1/x"


def arm_ssh_command(repo: Path, marker: Path) -> str:
    configure(repo, "core.sshCommand", f"touch {marker}; false")
    return "git ls-remote ssh://127.0.0.1:1/x"


def arm_ext_transport(repo: Path, marker: Path) -> str:
    configure(repo, "protocol.allow", "always", "protocol.ext.allow", "always")
    configure(repo, "remote.origin.url", f"ext::sh -c touch% {marker}")
    return "git ls-remote origin"


def arm_hooks_dir(repo: Path, marker: Path) -> str:
    script(repo / ".git" / "hooks" / "pre-commit", marker, "exit 0")
    return "git commit -qm x --allow-empty"


def arm_hooks_path(repo: Path, marker: Path) -> str:
    (repo / "hooks").mkdir()
    script(repo / "hooks" / "pre-commit", marker, "exit 0")
    configure(repo, "core.hooksPath", "hooks")
    return "git commit -qm x --allow-empty"


def arm_editor(repo: Path, marker: Path) -> str:
    configure(repo, "core.editor", f"touch {marker}; true")
    return "git commit --allow-empty"


def arm_sequence_editor(repo: Path, marker: Path) -> str:
    git(repo, "commit", "-qam", "second")
    configure(repo, "sequence.editor", f"touch {marker}; true")
    return "git rebase -q -i HEAD~1"


def arm_alternate_refs(repo: Path, marker: Path) -> str:
    other = make_repo(repo.parent / "other")
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(str(other / ".git" / "objects") + "\n")
    configure(repo, "core.alternateRefsCommand", script(repo.parent / "alt", marker))
    return f"git fetch -q {shlex.quote(str(other))}"


OTHER_COMMANDS: dict[str, Callable[[Path, Path], str]] = {
    "credential.helper": arm_credential_helper,
    "core.askPass": arm_askpass,
    "core.gitProxy": arm_git_proxy,
    "core.sshCommand": arm_ssh_command,
    "ext:: transport": arm_ext_transport,
    ".git/hooks": arm_hooks_dir,
    "core.hooksPath": arm_hooks_path,
    "core.editor": arm_editor,
    "sequence.editor": arm_sequence_editor,
    "core.alternateRefsCommand": arm_alternate_refs,
}


@pytest.mark.parametrize("attack", OTHER_COMMANDS)
def test_other_commands(attack: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    command = OTHER_COMMANDS[attack](repo, marker)
    run(repo, command, protected=False, env={"GIT_TERMINAL_PROMPT": "0"})
    assert marker.exists(), attack
    marker.unlink()
    run(repo, command)
    assert not marker.exists()


def test_user_credential_helper_still_answers(tmp_path: Path, home: Path) -> None:
    store = tmp_path / "credentials"
    store.write_text("https://user:secret@example.com\n")
    git(home, "config", "--global", "credential.helper", f"store --file={store}")
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    done = run(repo, arm_credential_helper(repo, marker))
    assert not marker.exists()
    assert "password=secret" in done.stdout


def test_merge_driver(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    modify(repo / "a.txt", "1\n2\n3\n4\n5\n")
    git(repo, "commit", "-qam", "base")
    git(repo, "checkout", "-qb", "other")
    modify(repo / "a.txt", "1\n2\n3\n4\nFIVE\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "main")
    modify(repo / "a.txt", "ONE\n2\n3\n4\n5\n")
    git(repo, "commit", "-qam", "ours")
    configure(repo, "merge.evil.driver", f"touch {marker}; false")
    done = run(repo, "git merge -q --no-edit other")
    assert not marker.exists()
    assert done.returncode == 0, done.stderr
    assert (repo / "a.txt").read_text() == "ONE\n2\n3\n4\nFIVE\n"
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    run(repo, "git merge -q --no-edit other", protected=False)
    assert marker.exists()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_pager_on_a_terminal(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    marker = tmp_path / "pwned"
    configure(repo, "core.pager", f"touch {marker}; cat", "pager.log", f"touch {marker}; cat")

    def on_tty(protected: bool) -> None:
        env = scrub_git_variables(os.environ)
        env = env | git_environment(repo) if protected else env
        primary, secondary = os.openpty()
        try:
            subprocess.run(
                ["bash", "-c", "git log"],
                cwd=repo,
                env=env,
                stdin=secondary,
                stdout=secondary,
                stderr=secondary,
                timeout=60,
            )
        finally:
            os.close(secondary)
            os.close(primary)

    on_tty(protected=True)
    assert not marker.exists()
    on_tty(protected=False)
    assert marker.exists()


# -- what the environment cannot cover -------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("alias.st2", "!touch pwned", "alias.st2"),
        ("difftool.evil.cmd", "touch pwned", "difftool.evil.cmd"),
        ("mergetool.evil.path", "/tmp/x", "mergetool.evil.path"),
        ("submodule.s.update", "!touch pwned", "submodule.s.update"),
        ("sendemail.toCmd", "touch pwned", "sendemail.tocmd"),
        ("remote.origin.uploadpack", "touch pwned; git-upload-pack", "remote.origin.uploadpack"),
        ("alias.lg", "log --oneline", None),
        ("submodule.s.update", "rebase", None),
    ],
)
def test_repository_runs_code(key: str, value: str, named: str | None, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    configure(repo, key, value)
    assert repository_runs_code(repo) == named
    assert repository_runs_code(repo / "nested" / "missing") == named


# -- config files git would refuse, or that must not hang or crash the scan -------------


def test_garbage_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    rng = random.Random(7)
    config = repo / ".git" / "config"
    config.write_bytes(config.read_bytes() + bytes(rng.randrange(256) for _ in range(4096)))
    env = git_environment(repo)
    assert len(config_pairs(env)) >= 5
    found = repository_runs_code(repo)
    assert found is not None
    assert str(config) in found


@pytest.mark.parametrize("kind", ["fifo", "symlink loop", "directory", "unreadable"])
def test_unreadable_config(kind: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    config = repo / ".git" / "config"
    config.unlink()
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(config)
    elif kind == "symlink loop":
        config.symlink_to(config)
    elif kind == "directory":
        config.mkdir()
    else:
        config.write_text('[diff "evil"]\n\ttextconv = evil\n')
        config.chmod(0)
        if os.access(config, os.R_OK):
            pytest.skip("running as a user who reads everything")
    env = git_environment(repo)
    assert len(config_pairs(env)) == 5
    found = repository_runs_code(repo)
    assert (found is None) == (kind == "directory")  # git reads no config from a directory


def test_include_loop_and_odd_driver_names(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    config = repo / ".git" / "config"
    with config.open("a") as f:
        f.write('[diff ""]\n\ttextconv = x\n[diff "sp ace\\"q"]\n\ttextconv = y\n')
        f.write("[include]\n\tpath = config\n")
    assert "include" in (repository_runs_code(repo) or "")
    pairs = config_pairs(git_environment(repo))
    assert ("diff..textconv", "cat") in pairs
    assert ('diff.sp ace"q.textconv', "cat") in pairs
    # git itself refuses the include loop; with the loop gone the odd names still parse.
    config.write_text(config.read_text().replace("[include]\n\tpath = config\n", ""))
    done = run(repo, "git log --oneline")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "content",
    [b"gitdir: \0/x\n", b"gitdir:", b"gitdir: .", b"gitdir: a.txt", b"\xff\xfe", b""],
)
def test_odd_gitfiles_do_not_raise(content: bytes, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_bytes(content)
    (repo / ".git" / "commondir").write_bytes(content)
    assert len(config_pairs(git_environment(repo / "sub"))) >= 5
    repository_runs_code(repo / "sub")


def test_gitfile_pointing_elsewhere(tmp_path: Path) -> None:
    real = make_repo(tmp_path / "real")
    marker = tmp_path / "pwned"
    arm_textconv(real, marker)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {real / '.git'}\n")
    assert ("diff.evil.textconv", "cat") in config_pairs(git_environment(ws))


# -- the config parser against git's own ------------------------------------------------

TRICKY_CONFIGS = [
    '[diff "e\\\\v\\"il"]\n\tTextConv = "a;b" # c\n',
    "[Diff.EVIL]textconv=x\n",
    "\ufeff[core]\r\n\tfsmonitor = a \\\n b\n",
    '[core]\n\tfsmonitor\n\tpager = "  x  "  y  ; z\n',
    '[a "b"] c = "d\\te\\nf"\n',
    "[a]\n\tb = \\q\n",
    '[a]\n\tb = "unterminated\n',
    "[a\n",
    '[a "b\n',
    'k=v\n[x.y "Z"]\n\tk=\n',
    "[a]\n\tb ; c\n",
    "[a]\n\t-b = c\n",
    '[ "x"]\n\ty = 1\n',
]


def git_config_list(path: Path) -> list[tuple[str, str | None]] | None:
    done = subprocess.run(["git", "config", "-f", str(path), "--list", "-z"], capture_output=True)
    if done.returncode:
        return None
    pairs: list[tuple[str, str | None]] = []
    for item in done.stdout.split(b"\0")[:-1]:
        key, newline, value = item.partition(b"\n")
        decoded = value.decode("utf-8", "surrogateescape") if newline else None
        pairs.append((key.decode("utf-8", "surrogateescape"), decoded))
    return pairs


def parse_like_git(text: str) -> list[tuple[str, str | None]] | None:
    try:
        return git_safety._parse_config(text)
    except ValueError:
        return None


def random_configs(count: int) -> list[str]:
    pieces = ["[", "]", '"', "\\", "\n", " ", "\t", "#", ";", "=", "a", "B", ".", "-", "\r"]
    pieces += ["[core]", '[diff "e v\\"il"]', "[Diff.EVIL]", "TextConv", " = ", "\\n", "é"]
    rng = random.Random(2039)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 25))) for _ in range(count)]


@pytest.mark.parametrize("text", TRICKY_CONFIGS + random_configs(150))
def test_parser_agrees_with_git(text: str, tmp_path: Path) -> None:
    path = tmp_path / "c.cfg"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert parse_like_git(text) == git_config_list(path)


def test_git_environment_does_not_touch_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws")
    before = sorted((p, p.stat().st_mtime_ns) for p in (repo / ".git").rglob("*"))
    git_environment(repo)
    repository_runs_code(repo)
    assert sorted((p, p.stat().st_mtime_ns) for p in (repo / ".git").rglob("*")) == before
