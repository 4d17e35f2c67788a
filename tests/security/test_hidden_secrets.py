"""Issue 20, class 3 (the sandbox's part): what a command must not read.

Inside the sandbox local-tools' state dir is not there, the credential stores are
hidden (`[sandbox] deny_read` / `allow_read` change the list), and commands that run
without asking (the built-in read-only rules) see `.env`-style files empty: recursive
readers (issue 27) included. A command a person approved sees them. Real Toolbox,
bash, grep, ripgrep and git under each engine that works here; each test asserts the
canary was not printed (and, for the approved command, that it was).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools.interact.base import Answer, PermissionRequest
from local_tools.search.ripgrep import find_rg
from local_tools.security import sandbox as sandbox_module
from local_tools.security.hidden_paths import SecretFiles, credential_paths, is_secret_name
from local_tools.security.sandbox import ENGINE_VARIABLE, sandbox_engine

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the OS sandbox is Linux only"
)

CANARY = "CANARY-7f3a91"
APPROVED = {"execute:command": "allow", "external:file": "allow"}


@pytest.fixture(params=["bwrap", "landlock"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    kind = str(request.param)
    monkeypatch.setenv(ENGINE_VARIABLE, kind)
    found = sandbox_engine()
    if found.name != kind:
        pytest.skip(f"{kind} does not work on this machine: {found.detail}")
    if found.options == ("--no-ns",):
        pytest.skip("landlock without namespaces cannot hide paths")
    yield kind
    sandbox_module._detected.cache_clear()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with credential stores holding the canary (the code reads HOME per call)."""
    h = tmp_path / "home"
    for rel in (".ssh/id_rsa", ".aws/credentials", ".config/gcloud/token.json",
                ".kube/config", ".docker/config.json", ".mozilla/firefox/p/logins.json",
                ".local/share/keyrings/login.keyring"):  # fmt: skip
        (h / rel).parent.mkdir(parents=True, exist_ok=True)
        (h / rel).write_text(f"{CANARY}\n")
    for rel in (".netrc", ".git-credentials", ".npmrc", ".pypirc"):
        (h / rel).write_text(f"{CANARY}\n")
    (h / "notes.txt").write_text("visible\n")
    (h / "private").mkdir()
    (h / "private" / "key").write_text(f"{CANARY}\n")
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.fixture
def secrets(workspace: Path) -> Path:
    """`.env`-style files around the workspace, and look-alikes that are not secret."""
    (workspace / ".env").write_text(f"API_KEY={CANARY}\n")
    (workspace / "sub" / "deeper").mkdir(parents=True)
    (workspace / "sub" / "prod.env").write_text(f"DB={CANARY}\n")
    (workspace / "sub" / "deeper" / ".env.local").write_text(f"TOKEN={CANARY}\n")
    (workspace / ".env.example").write_text("API_KEY=changeme\n")
    (workspace / "a").mkdir()
    (workspace / "b").mkdir()
    (workspace / "a" / ".env").write_text(f"A={CANARY}\n")
    (workspace / "b" / ".env").write_text("B=other\n")
    (workspace / "code.py").write_text("KEY = 'not secret'\n")
    return workspace


def run(tb: Any, command: str) -> dict[str, Any]:
    return ok(tb.run("exec_cmd", {"command": command}))


def shown(result: dict[str, Any]) -> str:
    """What the command printed (an envelope's output; a refusal printed nothing)."""
    out = result.get("output", result) if "success" in result else result
    if "success" in result and not result["success"]:
        return ""
    return "".join(str(out.get(k, "")) for k in ("stdout", "stderr"))


# -- the state dir ---------------------------------------------------------------


def test_state_dir_is_not_there(make_toolbox: Any, tmp_path: Path, engine: str) -> None:
    state = tmp_path / "state"
    tb = make_toolbox({"permissions": APPROVED})
    (state / "server-token").write_text(f"{CANARY}\n")
    tb.run("read_file", {"path": "nope"})  # an audit row
    out = run(
        tb,
        f"cat {state}/server-token; ls -aR {state}; cat {state}/audit.sqlite | head -c 2000;"
        f" find {state} -name 'approvals*'",
    )
    assert CANARY not in shown(out)
    assert "server-token" not in out["stdout"]
    assert "audit" not in out["stdout"]


def test_commands_keep_their_temp_dir_and_spilled_output(
    make_toolbox: Any, tmp_path: Path, engine: str
) -> None:
    tb = make_toolbox({"permissions": APPROVED, "limits": {"max_output_lines": 20}})
    long = run(tb, "seq 1 500")
    spill = long["stdout_path"]
    assert str(tmp_path / "state") in spill
    out = run(tb, f'echo t > "$TMPDIR/x" && cat "$TMPDIR/x" && tail -n 1 {spill}')
    assert out["stdout"] == "t\n500\n", out["stderr"]
    # read-only, and the state dir around them stays hidden
    out = run(tb, f"echo x >> {spill}")
    assert out["exit_code"] != 0
    assert Path(spill).read_text().splitlines()[-1] == "500"
    out = run(tb, f"ls -a {tmp_path / 'state'}")
    assert "audit" not in out["stdout"] and "workspaces" in out["stdout"]


# -- credential stores -------------------------------------------------------------


def test_credential_stores_are_hidden(make_toolbox: Any, home: Path, engine: str) -> None:
    tb = make_toolbox({"permissions": APPROVED})
    out = run(
        tb,
        "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc ~/.git-credentials ~/.npmrc ~/.pypirc;"
        " cat $HOME/.config/gcloud/token.json ~/.kube/config ~/.docker/config.json;"
        " grep -r . ~/.mozilla ~/.local/share/keyrings; cat ~/notes.txt",
    )
    assert CANARY not in shown(out)
    assert "visible" in out["stdout"]  # the rest of HOME is there
    for rel in (".ssh/id_rsa", ".netrc"):  # and the real files are untouched
        assert (home / rel).read_text() == f"{CANARY}\n"


def test_through_a_workspace_symlink(
    make_toolbox: Any, workspace: Path, home: Path, engine: str
) -> None:
    (workspace / "keys").symlink_to(home / ".ssh")
    (workspace / "creds").symlink_to(home / ".aws" / "credentials")
    tb = make_toolbox({"permissions": APPROVED})
    out = run(tb, "cat keys/id_rsa creds; grep -r . keys")
    assert CANARY not in shown(out)


def test_deny_read_and_allow_read(make_toolbox: Any, home: Path, engine: str) -> None:
    sandbox = {"deny_read": ["~/private"], "allow_read": ["~/.aws"]}
    tb = make_toolbox({"permissions": APPROVED, "sandbox": sandbox})
    out = run(tb, "cat ~/private/key; echo; cat ~/.ssh/id_rsa")
    assert CANARY not in shown(out)
    out = run(tb, "cat ~/.aws/credentials")
    assert out["stdout"] == f"{CANARY}\n"


def test_credential_paths_follow_home_and_config(home: Path) -> None:
    found = {str(p) for p in credential_paths()}
    assert str(home / ".ssh") in found and str(home / ".netrc") in found
    assert str(home / "notes.txt") not in found
    found = {str(p) for p in credential_paths(["~/private", "~/missing"], ["~/.ssh"])}
    assert str(home / "private") in found
    assert str(home / ".ssh") not in found
    assert not any(p.endswith("missing") for p in found)


# -- .env files: commands that run without asking --------------------------------------


@pytest.fixture
def rg_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """ripgrep as a command finds it: on PATH (the venv's bin is not, inside)."""
    rg = find_rg()
    if rg is None:
        pytest.skip("ripgrep is not installed")
    monkeypatch.setenv("PATH", f"{Path(rg.path).parent}{os.pathsep}{os.environ['PATH']}")


# Each runs without asking under the built-in rules (asserted): the hiding is what
# keeps the canary out.
UNASKED = [
    "grep -r {canary} .",
    "grep -r '' .",
    "grep -R --include='.e*' KEY .",
    "grep -rn TOKEN sub",
    "grep -rh = a b sub",
    "rg -uu {canary}",
    "rg -uu -N API_KEY",
    "rg --hidden --no-ignore = sub",
    "diff -r a b",
    "git diff --no-index a b",
]


@pytest.mark.parametrize("command", UNASKED)
def test_unasked_readers_do_not_print_secrets(
    make_toolbox: Any, secrets: Path, engine: str, rg_on_path: None, command: str
) -> None:
    tb = make_toolbox()  # default rules: only the read-only set runs without asking
    out = tb.run("exec_cmd", {"command": command.format(canary=CANARY)})
    assert CANARY not in shown(out)
    assert (secrets / ".env").read_text() == f"API_KEY={CANARY}\n"
    assert (secrets / "a" / ".env").read_text() == f"A={CANARY}\n"


# Spellings the parser cannot read exactly, or that name a secret file: they ask
# (refused here, with nobody to ask) or, if they ran, would see the files empty.
ASKED = [
    "cat sub/deeper/*",
    "tail -n 5 a/.e*",
    "head -c 100 sub/*",
    "wc -c .env sub/prod.env",
    "cat */.env",
    "x=.env; cat $x",
]


@pytest.mark.parametrize("command", ASKED)
def test_other_spellings_do_not_print_secrets(
    make_toolbox: Any, secrets: Path, engine: str, command: str
) -> None:
    assert CANARY not in shown(make_toolbox().run("exec_cmd", {"command": command}))


def test_git_grep_asks_or_hides(make_toolbox: Any, secrets: Path, engine: str) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    os.system(f"cd {secrets} && {git} init -q && {git} add -A >/dev/null 2>&1")
    tb = make_toolbox()
    for command in (f"git grep {CANARY}", f"git grep --untracked {CANARY}", "git grep -e ''"):
        assert CANARY not in shown(tb.run("exec_cmd", {"command": command}))


def test_example_files_stay_visible(make_toolbox: Any, secrets: Path, engine: str) -> None:
    out = run(make_toolbox(), "cat .*.example code.py")
    assert out["stdout"] == "API_KEY=changeme\nKEY = 'not secret'\n"


def test_a_secret_file_made_just_before_is_hidden(
    make_toolbox: Any, workspace: Path, engine: str
) -> None:
    tb = make_toolbox()
    run(tb, "ls")  # the listing is cached now
    (workspace / "new").mkdir()
    (workspace / "new" / ".env").write_text(f"K={CANARY}\n")
    assert CANARY not in shown(tb.run("exec_cmd", {"command": "grep -r K ."}))


class _Person:
    """A person at the terminal who approves once."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.asked.append(str(request.subject))
        return "once"


def test_a_command_the_person_approved_sees_them(
    make_toolbox: Any, secrets: Path, engine: str
) -> None:
    person = _Person()
    tb = make_toolbox(asker=person)
    out = run(tb, "python3 -c \"print(open('.env').read())\"")
    assert person.asked  # it was asked
    assert CANARY in out["stdout"]
    assert (secrets / ".env").read_text() == f"API_KEY={CANARY}\n"


def test_a_rule_of_the_users_config_counts_as_approval(
    make_toolbox: Any, secrets: Path, engine: str
) -> None:
    tb = make_toolbox({"permissions": {"execute:command": {"grep *": "allow"}}})
    out = run(tb, "grep -r API_KEY .")
    assert CANARY in out["stdout"]


def test_with_the_sandbox_off_the_result_says_what_is_not_hidden(
    make_toolbox: Any, secrets: Path
) -> None:
    tb = make_toolbox({"sandbox": {"mode": "off"}})
    out = run(tb, "ls")
    assert "not hidden" in out["sandbox_note"] or "nothing is hidden" in out["sandbox_note"]
    assert ".env" in out["sandbox_note"]


# -- the finder ------------------------------------------------------------------------


def test_secret_names() -> None:
    for name in (".env", "prod.env", ".env.local", ".env.production"):
        assert is_secret_name(name), name
    for name in (".env.example", ".env.sample", ".env.template", "env.py", ".envrc", "x.txt"):
        assert not is_secret_name(name), name


def test_finder_sees_changes_and_skips_git(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.env").write_text("")
    (tmp_path / ".env").mkdir()  # a virtualenv named .env is a folder: not hidden
    (tmp_path / ".env" / "a.py").write_text("")
    finder = SecretFiles()
    assert finder.find([tmp_path]) == []
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "prod.env").write_text("")
    assert finder.find([tmp_path]) == [tmp_path / "d" / "prod.env"]
    os.rename(tmp_path / "d" / "prod.env", tmp_path / "d" / "x.txt")
    assert finder.find([tmp_path]) == []


def test_finder_cost_on_ten_thousand_files(tmp_path: Path) -> None:
    """The figure the README quotes: a first scan, then one stat per folder."""
    for d in range(1000):
        sub = tmp_path / f"p{d // 100}" / f"m{d % 100}"
        sub.mkdir(parents=True)
        for f in range(10):
            (sub / f"f{f}.py").write_text("")
    (tmp_path / "p3" / ".env").write_text("")
    finder = SecretFiles()
    start = time.perf_counter()
    assert len(finder.find([tmp_path])) == 1
    first = time.perf_counter() - start
    start = time.perf_counter()
    assert len(finder.find([tmp_path])) == 1
    again = time.perf_counter() - start
    assert first < 5 and again < 2  # generous: CI machines are slow; see the README


# -- re-attack: one approved part does not unhide the whole line ------------------------


@pytest.mark.parametrize(
    "command",
    [
        "python3 build.py; grep -r {canary} .",
        "python3 build.py && cat .env sub/prod.env",
        "python3 build.py | grep -r {canary} .",
        "grep -r {canary} . ; python3 build.py",
    ],
)
def test_an_approved_part_does_not_unhide_the_rest(
    make_toolbox: Any, secrets: Path, engine: str, command: str
) -> None:
    (secrets / "build.py").write_text("pass\n")
    tb = make_toolbox({"permissions": {"execute:command": {"python3 build.py": "allow"}}})
    out = tb.run("exec_cmd", {"command": command.format(canary=CANARY)})
    assert CANARY not in shown(out)


@pytest.mark.parametrize("default", ["variable", "platform"])
def test_the_default_state_dir_is_hidden_too(
    make_toolbox: Any, tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch, default: str
) -> None:
    """A Toolbox with a state dir of its own: the person's servers keep their token in
    the default one (`$LOCAL_TOOLS_STATE_DIR`, else the platform's)."""
    theirs = tmp_path / "default-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    if default == "platform":
        monkeypatch.delenv("LOCAL_TOOLS_STATE_DIR", raising=False)
        theirs = tmp_path / "xdg" / "local-tools"
    else:
        monkeypatch.setenv("LOCAL_TOOLS_STATE_DIR", str(theirs))
    theirs.mkdir(parents=True)
    (theirs / "server-token").write_text(f"{CANARY}\n")
    tb = make_toolbox({"permissions": APPROVED}, state_dir=tmp_path / "own-state")
    out = run(tb, f"cat {theirs}/server-token; ls -a {theirs}")
    assert CANARY not in shown(out)
    assert "server-token" not in out["stdout"]


# -- re-attack: a tracked .env through git's own history --------------------------------


GIT = shutil.which("git")


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize(
    "command",
    ["git log -p", "git show HEAD", "git diff HEAD~1", "git diff", "git show HEAD:conf/prod.env",
     "git log -p --all -- .", "git grep STRIPE"],
)  # fmt: skip
def test_git_does_not_print_a_tracked_env(
    make_toolbox: Any, workspace: Path, engine: str, command: str
) -> None:
    import subprocess

    def g(*a: str) -> None:
        subprocess.run(
            [str(GIT), "-c", "user.email=u@e", "-c", "user.name=u", *a],
            cwd=workspace, check=True, capture_output=True,
        )  # fmt: skip

    g("init", "-q")
    (workspace / "a.txt").write_text("a\n")
    g("add", "a.txt")
    g("commit", "-qm", "one")
    (workspace / "conf").mkdir()
    (workspace / "conf" / "prod.env").write_text(f"STRIPE_KEY={CANARY}\n")
    g("add", "conf/prod.env")
    g("commit", "-qm", "two")
    tb = make_toolbox()
    out = tb.run("exec_cmd", {"command": command})
    assert CANARY not in shown(out)
    assert not out["success"]  # asked, and nobody was there to approve


# -- re-attack: a marker the model can write does not stop the search -------------------


@pytest.mark.parametrize("where", ["pyvenv.cfg", "backend/pyvenv.cfg"])
def test_a_written_pyvenv_cfg_does_not_unhide(
    make_toolbox: Any, workspace: Path, engine: str, where: str
) -> None:
    (workspace / "backend" / "app").mkdir(parents=True)
    (workspace / "backend" / "app" / ".env").write_text(f"DB_PASSWORD={CANARY}\n")
    tb = make_toolbox()
    ok(tb.run("write_file", {"path": where, "content": "home = /usr\n"}))
    out = tb.run("exec_cmd", {"command": "grep -r . backend"})
    assert CANARY not in shown(out)


# -- re-attack: the hidden list and its bounds -------------------------------------------


HISTORIES = (
    ".config/git/credentials", ".gem/credentials", ".bash_history", ".zsh_history",
    ".python_history", ".psql_history", ".mysql_history", ".node_repl_history",
)  # fmt: skip


def test_more_credential_files_and_histories_are_hidden(
    make_toolbox: Any, home: Path, engine: str
) -> None:
    for rel in HISTORIES:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"export TOKEN={CANARY}\n")
    tb = make_toolbox({"permissions": APPROVED})
    out = run(tb, " ; ".join(f"cat {home / rel}" for rel in HISTORIES) + f"; cat {home}/notes.txt")
    assert CANARY not in shown(out)
    assert "visible" in out["stdout"]


def test_too_many_env_files_ask_instead_of_showing_some(
    make_toolbox: Any, workspace: Path, engine: str
) -> None:
    """Past MAX_FILES secret files the command asks: none is shown, and it does not take
    a mount per file to start."""
    from local_tools.security.hidden_paths import MAX_FILES

    for i in range(MAX_FILES + 50):
        (workspace / f"s{i}.env").write_text(f"K={CANARY}\n")
    tb = make_toolbox()
    started = time.monotonic()
    out = tb.run("exec_cmd", {"command": f"grep -r {CANARY} ."})
    assert time.monotonic() - started < 10
    assert CANARY not in shown(out)
    assert not out["success"]
