"""interactive_advice, path_arguments and unknown_paths on really parsed commands."""

from __future__ import annotations

import pytest

from local_tools.shell.command_checks import interactive_advice, path_arguments, unknown_paths
from local_tools.shell.command_parse import SimpleCommand, parse_command


def advice(source: str, *, background: bool = False) -> list[str | None]:
    parsed = parse_command(source)
    return [interactive_advice(c, background=background) for c in parsed.commands]


def refused(source: str, *, background: bool = False) -> str | None:
    found = [a for a in advice(source, background=background) if a is not None]
    return found[0] if found else None


# --- always refused ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        ("vim a.py", "edit"),
        ("vi a.py", "write_file"),
        ("sudo nvim /etc/hosts", "edit"),
        ("nano x", "edit"),
        ("emacs x", "edit"),
        ("micro x", "edit"),
        ("less README.md", "cat"),
        ("more x", "cat"),
        ("man ls", "man NAME | cat"),
        ("top", "top -b -n 1"),
        ("htop", "ps aux"),
        ("watch -n 1 ls", "once"),
        ("git commit", "-m"),
        ("git commit --amend", "-m"),
        ("git -C sub commit -a", "-m"),
        ("git rebase -i HEAD~3", "non-interactive"),
        ("git rebase --interactive main", "non-interactive"),
        ("git add -p", "git add PATH"),
        ("git add --interactive", "git add PATH"),
        ("git tag -a v1", "-m"),
        ("tmux", "-d"),
        ("tmux attach -t x", "-d"),
        ("screen -r", "-dm"),
    ],
)
def test_terminal_programs_are_refused_even_in_the_background(source: str, hint: str) -> None:
    for background in (False, True):
        message = refused(source, background=background)
        assert message is not None and hint in message


@pytest.mark.parametrize(
    "source",
    [
        "emacs --batch -l x.el",
        "man ls | cat",
        "man ls > ls.txt",
        "less README.md | head",
        "top -b -n 1",
        "git commit -m wip",
        "git commit -am wip",
        "git commit --message=wip",
        "git commit -F msg.txt",
        "git commit --amend --no-edit",
        "git commit -C HEAD",
        "git commit --fixup HEAD~1",
        "git rebase main",
        "git add -A",
        "git tag v1",
        "git tag -a v1 -m release",
        "git log -p",
        "tmux new -d -s build 'make'",
        "tmux ls",
        "screen -dmS x make",
        "screen -ls",
        "cat x",
        "vimdiff",  # not in the table: not ours to judge
    ],
)
def test_non_interactive_forms_pass(source: str) -> None:
    assert refused(source) is None


# --- refused in the foreground only -----------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "python",
        "python3",
        "python3.12",
        "python -i script.py",
        "python -",
        "python -X dev",
        "node",
        "node --inspect",
        "irb",
        "ghci",
        "R",
        "lua",
        "psql",
        "psql -h db -U me app",
        "mysql -u root",
        "sqlite3 app.db",
        "redis-cli -h cache",
        "ssh host",
        "ssh -p 2222 me@host",
        "sftp host",
        "ftp host",
        "telnet host 25",
        "docker run -it ubuntu bash",
        "docker run --rm -v a:b -i -t img",
        "docker exec -ti web sh",
        "podman run -it img",
    ],
)
def test_repls_and_shells_run_only_in_the_background(source: str) -> None:
    message = refused(source)
    assert message is not None and "background=true" in message and "process_input" in message
    assert refused(source, background=True) is None


@pytest.mark.parametrize(
    "source",
    [
        "python script.py",
        "python -c 'print(1)'",
        "python -m pytest -x",
        "python3 -V",
        "python --version",
        "echo 'print(1)' | python",
        "python < script.py",
        "python <<EOF\nprint(1)\nEOF\n",
        "find . -name '*.py' | xargs python",
        "node app.js",
        "node -e 'console.log(1)'",
        "node -v",
        "ruby -e 'p 1'",
        "perl -e 1",
        "R -e 'q()'",
        "lua -v",
        "psql -c 'select 1'",
        "psql -f dump.sql",
        "psql -l",
        "psql app < dump.sql",
        "mysql -e 'select 1'",
        "sqlite3 app.db 'select 1'",
        "sqlite3 app.db .tables",
        "redis-cli ping",
        "redis-cli --help",
        "sqlite3 -version",
        "psql -V",
        "ssh host uptime",
        "ssh -fN -L 8080:localhost:80 host",
        "sftp -b batch.txt host",
        "docker run --rm img",
        "docker run -i img < in",
        "docker run img -it",  # flags of the container's command
        "docker ps -a",
    ],
)
def test_non_interactive_runs_pass(source: str) -> None:
    assert refused(source) is None


def test_dynamic_and_empty_commands_get_no_advice() -> None:
    assert refused("$EDITOR x") is None
    assert refused("> out") is None


# --- path arguments -----------------------------------------------------------------


def paths(source: str) -> list[list[str]]:
    return [path_arguments(c) for c in parse_command(source).commands]


# Every word that may name a path is returned, relative ones too: a workspace symlink
# may lead out, so analysis.outside_paths resolves each (tests/security/test_outside_reads).
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("cat /etc/passwd", ["/etc/passwd"]),
        ("cat ../x a/../../b a..b", ["../x", "a/../../b", "a..b"]),
        ("ls ~ ~/x", ["~", "~/x"]),
        ("cat src/a.py ./b", ["src/a.py", "./b"]),
        ("curl https://x/../y file:///etc/passwd", []),
        ("cat /dev/null /dev/stdin /dev/stdout /dev/stderr -", []),
        ("cp --target-directory=/tmp/x a", ["/tmp/x", "a"]),
        (
            "dd if=/dev/sda of=../disk.img",
            ["if=/dev/sda", "/dev/sda", "of=../disk.img", "../disk.img"],
        ),
        ("grep -f/etc/x -o../y --color k", ["/etc/x", "../y", "k"]),
        ('cat $HOME/x "$(pwd)/../y" ${D}/..', []),  # dynamic: see unknown_paths
        ("cat '/a b'", ["/a b"]),
        ("ls > /tmp/out < ../in 2>/dev/null", ["/tmp/out", "../in"]),
        ("cat <<EOF\n/etc/passwd\nEOF\n", []),  # here-document text is not a path
        ("/usr/bin/cat a", ["a"]),  # the program is not an argument
    ],
)
def test_path_arguments(source: str, expected: list[str]) -> None:
    assert paths(source)[0] == expected


def test_path_arguments_of_wrapped_and_nested_commands() -> None:
    assert paths("sudo sh -c 'cat /etc/shadow'") == [["/etc/shadow"]]
    outer, inner = paths("find /var -exec cat {} \\;")
    assert "/var" in outer and inner == ["{}"]
    assert paths("cat /a /a") == [["/a"]]


def test_a_command_built_without_static_flags_counts_every_word() -> None:
    cmd = SimpleCommand(argv=("cat", "/etc/x"), program="cat", text="cat /etc/x")
    assert path_arguments(cmd) == ["/etc/x"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('cat $HOME/x "$(pwd)/../y" ${D}/.. ~root/.ssh {/etc/x,f}', None),
        ("cat < $f", ["$f"]),
        ("ls > ~user/out", ["~user/out"]),
        ("diff <(ls) <(ls -a)", []),  # a process substitution is a /dev/fd path
        ("cat ~/x /etc/y", []),  # known: path_arguments has them
    ],
)
def test_unknown_paths(source: str, expected: list[str] | None) -> None:
    cmd = parse_command(source).commands[0]
    if expected is None:
        expected = list(cmd.argv[1:])
    assert unknown_paths(cmd) == expected


# --- subjects the parser adjusts: writing options in clusters, .env patterns --------------


def texts(source: str) -> list[str]:
    parsed = parse_command(source)
    assert parsed.error is None, parsed.error
    return [c.text for c in parsed.commands]


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("sort -rnuo out in", "sort -rnu -o out in"),
        ("sort -to -k1 f", "sort -to -k1 f"),  # -t takes the rest: o is the separator
        ("file -zC -m m", "file -z -C -m m"),
        ("tree -aR", "tree -a -R"),
        ("sort -- -ro", "sort -- -ro"),
    ],
)
def test_writing_option_in_a_cluster_is_split(source: str, text: str) -> None:
    assert texts(source) == [text]


@pytest.mark.parametrize(
    "source",
    ["cat .en?", "cat .e*", "cat *.env", "head .[e]nv", "cat .{env,x}", "cat < .env", "ls d/*"],
)
def test_pattern_that_may_name_dotenv_is_dynamic(source: str) -> None:
    parsed = parse_command(source)
    # `.{env,x}`: brace expansion is not understood at all (tests/security/test_unknown_words)
    assert parsed.error is not None or parsed.commands[0].inexact is not None


@pytest.mark.parametrize("source", ["ls *.py", "cat .env.ex*", "cat ?.txt", "cat < .env.example"])
def test_pattern_that_cannot_name_dotenv_is_static(source: str) -> None:
    assert parse_command(source).error is None


# --- code hidden in values that bash evaluates ----------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "echo $((x))",
        "echo $[x]",
        "echo $(( $(id -u) + 1 ))",
        "((x)); ls",
        "for ((;x;)); do :; done",
        "echo ${x:x}",
        "echo ${x:1:$n}",
        "echo ${a[i]}",
        "echo ${#a[i]}",
        "echo ${!x}",
        "echo ${x@P}",
        "echo ${x@E}",
        "[[ -v x ]] && ls",
        "[ -v x ] && ls",
        "[[ $x -eq 1 ]] && ls",
        "cat <<EOF\n$((x))\nEOF",
        "cat <<EOF\n${!x}\nEOF",
    ],
)
def test_evaluated_values_are_dynamic(source: str) -> None:
    assert parse_command(source).error is not None


@pytest.mark.parametrize(
    "source",
    [
        "echo $((1 + 2)) $[3]",
        "for ((i=0; i<3; i++)); do echo $i; done",
        "echo ${x:-d} ${x:1:2} ${x: -1} ${a[@]:1} ${a[0]} ${#a[@]}",
        "echo ${x@Q} ${!} ${#x}",
        '[[ -f x ]] && [ "$x" -eq 1 ]',
    ],
)
def test_plain_expansions_stay_static(source: str) -> None:
    assert parse_command(source).error is None
