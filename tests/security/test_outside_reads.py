"""Class 3 of issue #20, first part: reads outside the roots ask, however they are spelled.

`external:file` judges the path a command's word will have: a word only known at run
time (`$D/x`, `{/etc/x,f}`, `~user`) is unknown and asks; a literal one is resolved,
symlinks included, so a workspace link to a secret folder is that folder. Each attack
runs the real tool (bash, nobody to ask) and asserts the canary was not printed. Most
run with `"execute:command" = "allow"`, so that only `external:file` stands in the way;
the default settings are checked too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from local_tools import Toolbox

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

CANARY = "CANARY-7f3e"
COMMANDS_ALLOWED = {"permissions": {"execute:command": "allow"}}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = Path(os.path.realpath(tmp_path)) / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(CANARY + "\n")
    return out


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of our own, with a canary where the user's dotfiles would be."""
    h = Path(os.path.realpath(tmp_path)) / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".bashrc").write_text(CANARY + "\n")
    (h / ".ssh" / "id_rsa").write_text(CANARY + "\n")
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.fixture
def ws(tmp_path: Path, outside: Path, home: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "src" / "x.txt").write_text("x\n")
    os.symlink(outside, root / "link")  # a workspace symlink to a folder outside
    os.symlink(home / ".ssh", root / "keys")
    return root


def make(ws: Path, tmp_path: Path, config: dict | None = None) -> Toolbox:
    return Toolbox(ws, config, state_dir=tmp_path / "state", audit=False, plugins=False)


@pytest.fixture
def tb(ws: Path, tmp_path: Path) -> Toolbox:
    box = make(ws, tmp_path, COMMANDS_ALLOWED)
    yield box
    box.close()


def run(tb: Toolbox, command: str, **env: str) -> dict:
    return tb.run("exec_cmd", {"command": command, "env": env})


def refused(result: dict, permission: str = "external:file") -> str:
    assert CANARY not in str(result), result
    assert result["success"] is False, result
    assert result["error"]["error_code"] == "PERMISSION_DENIED", result
    assert result["error"]["details"]["permission"] == permission, result
    return str(result["error"]["details"]["subject"])


# --- words only known at run time ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat $D/secret.txt",
        'cat "$D/secret.txt"',
        "cat ${D}/secret.txt",
        "cat $HOME/.ssh/id_rsa",
        "cat ${HOME}/.bashrc",
        "d=$D; cat $d/secret.txt",
        "cat $(printf %s $D)/secret.txt",
        "cat `printf %s $D`/secret.txt",
        "cat {$D/secret.txt,a.txt}",
        "cat ~$USER/.bashrc",
        "cat $D/secr*",
        "head -n 5 $D/secret.txt",
        "cat < $D/secret.txt",
        "f=$D/secret.txt; cat 0<$f",
        "eval cat $D/secret.txt",
        'sh -c "cat $D/secret.txt"',
        "cd $D && cat secret.txt",
    ],
)
def test_a_word_only_known_at_run_time_asks(tb: Toolbox, outside: Path, command: str) -> None:
    subject = refused(run(tb, command, D=str(outside)))
    assert subject.startswith("(unknown path) ")


def test_braces_naming_an_outside_file_ask(tb: Toolbox, outside: Path) -> None:
    for command in (
        f"cat {{{outside}/secret.txt,a.txt}}",
        f"cat {outside}/{{secret,other}}.txt",
        f"cat {outside}/secret.{{txt,x}}",
    ):
        assert refused(run(tb, command)).startswith("(unknown path) "), command


def test_tilde_forms_ask(tb: Toolbox, home: Path) -> None:
    assert refused(run(tb, "cat ~/.bashrc")) == str(home / ".bashrc")
    assert refused(run(tb, "cat ~/.ssh/id_rsa")) == str(home / ".ssh" / "id_rsa")
    refused(run(tb, "cat ~root/.bashrc"))
    refused(run(tb, "cd ~ && cat .bashrc"))
    refused(run(tb, "cd && cat .bashrc"))  # cd alone goes $HOME
    refused(run(tb, "cd /tmp; cd - && cat a.txt"))


# --- literal paths are resolved, symlinks included ----------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat link/secret.txt",
        "cat ./link/secret.txt",
        "cat src/../link/secret.txt",
        "cat keys/id_rsa",
        "cat l*/secret.txt",  # a pattern matched now: link/secret.txt
        "cat */secret.txt",
        "cat link/*",
        "ls link",
        "cat < link/secret.txt",
        "head -c 64 0<keys/id_rsa",
        "grep -r CANARY link",
        "tail -n 1 link/secret.txt",
        "diff --from-file=link/secret.txt a.txt",
        "cat link/../outside/secret.txt",
    ],
)
def test_a_workspace_symlink_out_asks(tb: Toolbox, command: str) -> None:
    refused(run(tb, command))


@pytest.mark.parametrize(
    "command",
    [
        "grep -R CANARY .",
        "grep -R CANARY",
        "grep -Rh CANARY src",
        "grep --dereference-recursive CANARY src",
        "rg -L CANARY",
        "rg --follow CANARY src",
        "find -L src -type f",
        "find src -follow -name '*.txt'",
        "ls -RL src",
        "tree -l src",
        "diff -r src src",
    ],
)
def test_a_recursive_read_through_a_symlink_deep_in_the_tree_asks(
    tb: Toolbox, ws: Path, command: str
) -> None:
    os.symlink(ws / "link", ws / "src" / "deep")  # src/deep -> link -> outside
    refused(run(tb, command))


def test_a_follow_flag_planted_as_a_file_name_asks(tb: Toolbox, ws: Path) -> None:
    # `grep CANARY *` beside a file named `-R` runs `grep -R CANARY ...`, which follows
    # sub/deep out of the workspace; grep is allowed by default and write_file too.
    (ws / "proj" / "sub").mkdir(parents=True)
    os.symlink(ws / "link", ws / "proj" / "sub" / "deep")

    def grep(command: str) -> dict:
        return tb.run("exec_cmd", {"command": command, "cwd": "proj"})

    assert grep("grep -s CANARY *")["success"] is True  # no such file yet: fine
    assert tb.run("write_file", {"path": "proj/-R", "content": ""})["success"]
    for command in ("grep CANARY *", "grep -h CANARY * ../a.txt", "diff * ../a.txt"):
        refused(grep(command))


def test_a_recursive_read_that_does_not_follow_links_is_allowed(tb: Toolbox, ws: Path) -> None:
    os.symlink(ws / "link", ws / "src" / "deep")
    for command in ("grep -r CANARY src", "rg CANARY src", "find src -type f", "ls -R src"):
        result = run(tb, command)
        assert result["success"] is True, (command, result)
        assert CANARY not in str(result), command


@pytest.mark.parametrize(
    "command",
    [
        "cd src && cat deep/secret.txt",
        "cd src; head deep/secret.txt",
        "pushd src >/dev/null && cat deep/secret.txt",
        "cd ./src/ && cd . && cat deep/*",
        "env --chdir=src cat deep/secret.txt",
        "env -C src cat deep/secret.txt",
    ],
)
def test_a_link_reached_after_changing_folder_asks(tb: Toolbox, ws: Path, command: str) -> None:
    os.symlink(ws / "link", ws / "src" / "deep")  # only src/ has it, the workspace does not
    refused(run(tb, command))


@pytest.mark.parametrize(
    "command",
    ["cat [^x]ink/secret.txt", "cat [!x]ink/secret.txt", "cat [[:alpha:]]ink/secret.txt"],
)
def test_bracket_patterns_are_matched_as_bash_would(tb: Toolbox, command: str) -> None:
    refused(run(tb, command))


def test_absolute_and_climbing_paths_ask(tb: Toolbox, outside: Path, ws: Path) -> None:
    for command in (
        f"cat {outside}/secret.txt",
        "cat ../outside/secret.txt",
        f"cat < {outside}/secret.txt",
        f"grep -f{outside}/secret.txt -r .",  # a value attached to an option
        f"wc --files0-from={outside}/secret.txt",
    ):
        refused(run(tb, command))


def test_the_state_dir_is_outside(tb: Toolbox, tmp_path: Path) -> None:
    token = tmp_path / "state" / "canary-token"
    token.write_text(CANARY)
    refused(run(tb, f"cat {token}"))
    os.symlink(tmp_path / "state", tb.workspace / "st")
    refused(run(tb, "cat st/canary-token"))


def test_default_settings_ask_too(ws: Path, tmp_path: Path, outside: Path) -> None:
    box = make(ws, tmp_path)
    try:
        refused(run(box, "cat link/secret.txt"))
        refused(run(box, "cat $HOME/.ssh/id_rsa"), "execute:command")  # not understood
        refused(run(box, "d=$D; cat $d/secret.txt", D=str(outside)), "execute:command")
        refused(run(box, f"cat {{{outside}/secret.txt,a.txt}}"), "execute:command")
    finally:
        box.close()


# --- what is allowed ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat a.txt",
        "cat ./a.txt src/x.txt",
        "cat src/../a.txt",
        "ls",
        "ls -la src",
        "cat *.txt",
        "grep -r a src",
        "cat < a.txt",
        "echo $HOME $D",  # echo opens nothing
        'printf "%s\\n" "$D"',
        "sort a.txt > /dev/null",
        "find . -name '*'",  # a quoted pattern is find's, not bash's: link is not followed
        "find . -name \\*.txt",
        "grep -rn 'l*' src",
    ],
)
def test_reads_inside_the_workspace_do_not_ask(tb: Toolbox, command: str, outside: Path) -> None:
    result = run(tb, command, D=str(outside))
    assert result["success"] is True, (command, result)
    assert CANARY not in str(result)


def test_a_rule_naming_the_resolved_folder_allows_the_link(ws: Path, tmp_path: Path) -> None:
    outside = Path(os.path.realpath(tmp_path)) / "outside"
    config = {
        "permissions": {
            "execute:command": "allow",
            "external:file": {f"{outside}/*": "allow"},
        }
    }
    box = make(ws, tmp_path, config)
    try:
        result = run(box, "cat link/secret.txt")
        assert result["success"] is True, result
        assert CANARY in result["output"]["stdout"]
        # ... and not the other link, which leads elsewhere
        refused(run(box, "cat keys/id_rsa"))
    finally:
        box.close()


def test_an_unknown_path_is_approved_only_exactly(tb: Toolbox, outside: Path) -> None:
    from local_tools.interact.base import Answer, PermissionRequest

    class Always:
        async def ask(self, request: PermissionRequest) -> Answer:
            return "always"

    command = "cat $D/secret.txt"
    result = tb.run("exec_cmd", {"command": command, "env": {"D": str(outside)}}, asker=Always())
    assert result["success"] is True, result
    assert refused(run(tb, "cat $D/other.txt", D=str(outside))) == "(unknown path) $D/other.txt"
