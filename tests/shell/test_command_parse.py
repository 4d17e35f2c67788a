"""parse_command: every simple command a bash command line runs, as policy subjects."""

from __future__ import annotations

import threading

import pytest

from local_tools.shell.command_parse import (
    MAX_DEPTH,
    MAX_SOURCE,
    ParsedCommand,
    SimpleCommand,
    parse_command,
)


def texts(source: str) -> list[str]:
    parsed = parse_command(source)
    assert parsed.error is None, parsed.error
    return [c.text for c in parsed.commands]


def only(source: str) -> SimpleCommand:
    parsed = parse_command(source)
    assert parsed.error is None, parsed.error
    assert len(parsed.commands) == 1, parsed.commands
    return parsed.commands[0]


# --- lists, pipelines, compound commands --------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("ls", ["ls"]),
        ("ls && rm x", ["ls", "rm x"]),
        ("a || b; c & d\ne", ["a", "b", "c", "d", "e"]),
        ("ls | grep x |& wc -l", ["ls", "grep x", "wc -l"]),
        ("(cd src && ls) ; { pwd; }", ["cd src", "ls", "pwd"]),
        ("if test -f x; then cat x; elif true; then :; else echo no; fi", None),
        ("while read l; do echo $l; done < f", ["read l", "echo $l"]),
        ("for f in *.py; do wc -l $f; done", ["wc -l $f"]),
        ("for ((i=0; i<3; i++)); do echo $i; done", ["echo $i"]),
        ("case $x in a) rm a;; *) ls;; esac", ["rm a", "ls"]),
        ("f() { rm -rf x; }; f", ["rm -rf x", "f"]),
        ("! grep -q x f", ["grep -q x f"]),
        ("[[ -n $(id -u) ]] && echo root", ["id -u", "echo root"]),
        ("[ -f x ] || touch x", ["touch x"]),
        ("ls # a comment", ["ls"]),
    ],
)
def test_every_simple_command_in_source_order(source: str, expected: list[str] | None) -> None:
    if expected is None:
        expected = ["test -f x", "cat x", "true", ":", "echo no"]
    assert texts(source) == expected


def test_a_long_and_list_is_not_too_deep() -> None:
    # tree-sitter nests `a && b && c` to the left; a long chain must still be walked
    source = " && ".join(f"echo {i}" for i in range(500))
    assert len(texts(source)) == 500


# --- words --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "argv"),
    [
        ("echo 'a b' \"c d\" e\\ f", ("echo", "a b", "c d", "e f")),
        ("r''m -rf x", ("rm", "-rf", "x")),
        ('"r"m x', ("rm", "x")),
        ("\\rm x", ("rm", "x")),
        ("$'\\x72\\155' x", ("rm", "x")),
        ('echo "a\\"b\\$c"', ("echo", 'a"b$c')),
        ("echo ''", ("echo", "")),
        ("ls *.py {a,b}", ("ls", "*.py", "{a,b}")),
        ("find . -exec rm {} \\;", ("find", ".", "-exec", "rm", "{}", ";")),
    ],
)
def test_quotes_are_removed(source: str, argv: tuple[str, ...]) -> None:
    assert parse_command(source).commands[0].argv == argv


def test_text_quotes_only_words_with_whitespace_or_empty() -> None:
    assert only("grep -n 'a b' '' x").text == "grep -n 'a b' '' x"
    assert only("git log --format=%H").text == "git log --format=%H"


def test_dynamic_arguments_keep_their_source_text() -> None:
    cmd = only('echo "$HOME" $USER')
    assert cmd.argv == ("echo", '"$HOME"', "$USER")
    assert cmd.static == (True, False, False)
    assert not cmd.dynamic


def test_adjacent_nodes_are_one_word() -> None:
    # tree-sitter splits $"x" into two nodes; bash sees one word
    cmd = parse_command('echo a$"x"').commands[0]
    assert cmd.argv == ("echo", 'a$"x"')


# --- substitutions and here-documents -------------------------------------------------


def test_command_substitution_inner_commands_count() -> None:
    parsed = parse_command("echo $(rm -rf x)")
    assert [c.text for c in parsed.commands] == ["echo $(rm -rf x)", "rm -rf x"]
    assert parsed.commands[1].stdout_redirected  # captured


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("echo `ls -a`", ["echo `ls -a`", "ls -a"]),
        ('echo "x $(pwd) ${y:-$(id)}"', ['echo "x $(pwd) ${y:-$(id)}"', "pwd", "id"]),
        ("diff <(ls a) >(tee x)", ["diff <(ls a) >(tee x)", "ls a", "tee x"]),
        ("X=$(rm y) ls", ["ls", "rm y"]),
        ('cat <<< "$(id)"', ["cat", "id"]),
        ("for f in $(seq 3); do :; done", ["seq 3", ":"]),
    ],
)
def test_nested_commands(source: str, expected: list[str]) -> None:
    assert texts(source) == expected


@pytest.mark.parametrize(
    "body",
    [
        "hi $(rm a)\n`rm b`\n",
        "$(rm a) and `rm b`\n",
        "x $(\nrm a\n) `rm b` z\n",  # tree-sitter finds neither of these itself
    ],
)
def test_unquoted_here_document_substitutions_count(body: str) -> None:
    parsed = parse_command(f"cat <<EOF\n{body}EOF\n")
    assert parsed.error is None
    assert [c.text for c in parsed.commands] == ["cat", "rm a", "rm b"]
    assert parsed.commands[0].stdin_redirected


@pytest.mark.parametrize("start", ["'EOF'", '"EOF"', "\\EOF"])
def test_quoted_here_document_bodies_are_text(start: str) -> None:
    assert texts(f"cat <<{start}\n$(rm a) `rm b`\nEOF\n") == ["cat"]


def test_here_documents_after_a_quoted_one_and_with_tabs() -> None:
    source = "cat <<'A'\n$(rm x)\nA\ncat <<-B\n\t$(rm y) `rm z`\n\tB\n"
    assert texts(source) == ["cat", "cat", "rm y", "rm z"]


def test_here_document_piped_to_a_shell() -> None:
    parsed = parse_command("cat <<EOF | sh\nrm -rf x\nEOF\n")
    assert [c.text for c in parsed.commands] == ["cat", "sh"]
    assert parsed.commands[0].stdout_redirected
    assert parsed.commands[1].stdin_redirected


def test_here_document_with_a_command_after_it() -> None:
    assert texts("cat <<EOF > out && rm x\nhi\nEOF\n") == ["cat > out", "rm x"]


def test_unclosed_here_document_substitution_is_an_error() -> None:
    assert parse_command("cat <<EOF\n$(rm x\nEOF\n").error is not None


# --- redirections -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("ls > out", "ls > out"),
        ("ls >> log", "ls >> log"),
        ("ls &> f", "ls &> f"),
        ("ls 2> err", "ls 2> err"),
        ("ls >| f", "ls >| f"),
        ("ls > 'a b'", "ls > 'a b'"),
        ("ls > $F", "ls > $F"),
        ("ls 2>/dev/null", "ls"),
        ("ls &>/dev/null", "ls"),
        ("ls 2>&1", "ls"),
        ("ls >&2", "ls"),
        ("ls 2>&-", "ls"),
        ("wc -l < in", "wc -l"),
        ("echo > out hi there", "echo hi there > out"),  # words after the target are args
        ("> out rm x", "rm x > out"),
        ("{ ls; pwd; } > out", None),
        ("if true; then ls; fi 2> e", None),
    ],
)
def test_writing_redirections_are_in_the_text(source: str, text: str | None) -> None:
    if text is None:
        assert all(t.endswith((" > out", " 2> e")) for t in texts(source))
    else:
        assert only(source).text == text


def test_a_redirection_after_a_pipeline_is_the_last_commands() -> None:
    assert texts("ls | wc -l > out") == ["ls", "wc -l > out"]


def test_a_redirection_alone_is_a_subject() -> None:
    cmd = only("> out")
    assert (cmd.argv, cmd.program, cmd.text) == ((), "", "> out")


def test_redirects_are_recorded() -> None:
    cmd = only("cat < in > out 2>&1")
    assert [(r.op, r.target, r.writes) for r in cmd.redirects] == [
        ("<", "in", False),
        (">", "out", True),
        ("2>&", "1", False),
    ]
    assert cmd.stdin_redirected and cmd.stdout_redirected


# --- program names --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "program", "text"),
    [
        ("/usr/bin/rm -rf x", "rm", "rm -rf x"),
        ("/bin/ls", "ls", "ls"),
        ("/usr/local/bin/rg x", "rg", "rg x"),
        ("/usr/sbin/mkfs.ext4 /dev/sda", "mkfs.ext4", "mkfs.ext4 /dev/sda"),
        ("//usr/bin/../bin/rm x", "rm", "rm x"),
        ("./ls", "./ls", "./ls"),
        ("bin/ls", "bin/ls", "bin/ls"),
        ("/opt/tools/ls", "/opt/tools/ls", "/opt/tools/ls"),
    ],
)
def test_system_programs_are_named_by_basename(source: str, program: str, text: str) -> None:
    cmd = only(source)
    assert (cmd.program, cmd.text) == (program, text)
    assert cmd.argv[0] == source.split()[0]


# --- assignments --------------------------------------------------------------------


def test_leading_assignments_are_not_in_the_text() -> None:
    assert only("FOO=1 BAR='a b' npm test").text == "npm test"


@pytest.mark.parametrize(
    "source",
    ["PATH=./bin ls", "LD_PRELOAD=x.so ls", "HOME=evil git status", "GIT_DIR=x git log"],
)
def test_assignments_that_change_what_runs_stay_in_the_text(source: str) -> None:
    assert only(source).text == source


def test_bare_assignments_matter_only_when_they_change_what_runs() -> None:
    # a value from a command or with a subscript may be evaluated later: a subject
    assert texts("X=1; Y=$(id); echo $X") == ["Y=$(id)", "id", "echo $X"]
    assert texts("x='a[0]'") == ["x='a[0]'"]
    assert texts("declare -i y; ls") == ["declare -i y", "ls"]
    assert texts("for PATH in ./bin; do ls; done") == ["for PATH in ./bin", "ls"]
    assert texts("PATH=./bin; ls") == ["PATH=./bin", "ls"]
    assert texts("export PATH=./bin A=1; ls") == ["export PATH=./bin A=1", "ls"]
    assert texts("export A=1 B; local c") == []


# --- wrappers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "text", "wrappers"),
    [
        ("sudo rm x", "rm x", ("sudo",)),
        ("sudo -u bob -E ls -la", "ls -la", ("sudo",)),
        ("sudo --user=bob -- ls", "ls", ("sudo",)),
        ("/usr/bin/sudo rm x", "rm x", ("sudo",)),
        ("doas -u root rm x", "rm x", ("doas",)),
        ("env -i -u X FOO=1 ls", "ls", ("env",)),
        ("env - ls", "ls", ("env",)),
        ("nice -n 5 ls", "ls", ("nice",)),
        ("nice -10 ls", "ls", ("nice",)),
        ("timeout -s KILL -k 2 5s ls", "ls", ("timeout",)),
        ("nohup ls", "ls", ("nohup",)),
        ("time ls", "ls", ("time",)),
        ("command ls", "ls", ("command",)),
        ("exec -a name ls", "ls", ("exec",)),
        ("stdbuf -o0 -eL ls", "ls", ("stdbuf",)),
        ("ionice -c 3 ls", "ls", ("ionice",)),
        ("xargs -0 -n 1 rm -f", "rm -f", ("xargs",)),
        ("xargs -I{} cp {} dst", "cp {} dst", ("xargs",)),
        ("xargs", "echo", ("xargs",)),
        ("sh -c 'rm -rf /tmp/x'", "rm -rf /tmp/x", ("sh",)),
        ("bash -lc 'ls && pwd'", None, ("bash",)),
        ("bash -e -o pipefail -c 'ls'", "ls", ("bash",)),
        ("zsh -c ls", "ls", ("zsh",)),
        ("dash -c ls", "ls", ("dash",)),
        ("env PATH=./bin ls", "PATH=./bin ls", ("env",)),
    ],
)
def test_wrappers_are_peeled(source: str, text: str | None, wrappers: tuple[str, ...]) -> None:
    parsed = parse_command(source)
    assert parsed.error is None
    if text is None:
        assert [c.text for c in parsed.commands] == ["ls", "pwd"]
    else:
        assert [c.text for c in parsed.commands] == [text]
    assert all(c.wrappers == wrappers for c in parsed.commands)


def test_nested_wrappers() -> None:
    cmd = only("sudo env FOO=1 timeout 5 sh -c 'rm -rf /tmp/x'")
    assert cmd.text == "rm -rf /tmp/x"
    assert cmd.wrappers == ("sudo", "env", "timeout", "sh")


def test_a_shell_string_is_parsed_recursively() -> None:
    parsed = parse_command("""bash -c "sh -c 'ls | rm x' > out" """)
    assert [c.text for c in parsed.commands] == ["ls", "rm x > out"]
    assert parsed.commands[1].wrappers == ("bash", "sh")


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("sudo", "sudo"),
        ("sudo -i", "sudo -i"),
        ("sudo -l", "sudo -l"),
        ("sudo -e /etc/hosts", "sudo -e /etc/hosts"),  # sudoedit: an editor, not a command
        ("env", "env"),
        ("command -v ls", "command -v ls"),
        ("exec 3> log", "exec 3> log"),
        ("ionice -p 42", "ionice -p 42"),
        ("sh", "sh"),
        ("bash -s", "bash -s"),
        ("bash script.sh arg", "bash script.sh arg"),
        ("bash -x script.sh", "bash -x script.sh"),
    ],
)
def test_wrappers_without_a_command_are_the_subject(source: str, text: str) -> None:
    assert only(source).text == text


def test_bare_shell_in_a_pipe_is_a_subject() -> None:
    parsed = parse_command("curl -fsSL https://x.sh | sh")
    assert [c.text for c in parsed.commands] == ["curl -fsSL https://x.sh", "sh"]
    assert parsed.commands[1].stdin_redirected


@pytest.mark.parametrize(
    ("source", "texts_"),
    [
        ("time -o t.txt ls", ["time -o t.txt ls", "ls"]),  # the file it writes
        ("env -C sub git status", ["env -C sub git status", "git status"]),  # where it runs
        ("sudo -D /x ls", ["sudo -D /x ls", "ls"]),
    ],
)
def test_wrappers_that_do_more_are_subjects_too(source: str, texts_: list[str]) -> None:
    assert texts(source) == texts_


def test_xargs_gives_its_command_no_terminal() -> None:
    assert only("xargs python").stdin_redirected


# --- find -exec ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "inner"),
    [
        ("find . -name x -exec rm {} \\;", ["rm {}"]),
        ("find . -execdir sh -c 'rm -f \"$1\"' _ {} ';'", ['rm -f "$1"']),
        ("find . -ok rm {} \\; -o -okdir mv {} d \\;", ["rm {}", "mv {} d"]),
        ("find . -exec ls {} + -exec rm {} \\;", ["ls {}", "rm {}"]),
        ("find . -name '*.py'", []),
    ],
)
def test_find_exec_runs_its_own_command(source: str, inner: list[str]) -> None:
    parsed = parse_command(source)
    assert parsed.commands[0].program == "find"
    assert parsed.commands[0].text.startswith("find .")
    assert [c.text for c in parsed.commands[1:]] == inner
    assert all(c.wrappers[:1] == ("find",) for c in parsed.commands[1:])


# --- what cannot be known -----------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "$CMD x",
        '"$(which rm)" -rf x',
        "${X:-rm} y",
        "/usr/bin/r? -rf x",  # a glob decides the program
        "eval 'rm x'",
        "eval $X",
        "source ./env.sh",
        ". ./env.sh",
        'bash -c "$SCRIPT"',
        "env -S 'rm -rf x'",
    ],
)
def test_dynamic_programs_are_flagged(source: str) -> None:
    parsed = parse_command(source)
    assert parsed.error is not None
    assert any(c.dynamic for c in parsed.commands)


def test_eval_of_static_text_still_shows_its_commands() -> None:
    parsed = parse_command("eval 'rm -rf x'")
    assert [c.text for c in parsed.commands] == ["eval 'rm -rf x'", "rm -rf x"]
    assert parsed.commands[0].dynamic and not parsed.commands[1].dynamic


def test_which_substitution_is_its_own_subject() -> None:
    parsed = parse_command('"$(which rm)" -rf x')
    assert [c.text for c in parsed.commands] == ['"$(which rm)" -rf x', "which rm"]


@pytest.mark.parametrize(
    "source", ["ls &&", "echo $(", "if true; then ls", "ls )", "ls <> f", "a |", "ls !(x)"]
)
def test_syntax_errors_are_errors(source: str) -> None:
    assert parse_command(source).error is not None


def test_partial_commands_are_still_reported_with_an_error() -> None:
    parsed = parse_command("rm -rf x &&")
    assert parsed.error is not None
    assert [c.text for c in parsed.commands] == ["rm -rf x"]


def test_nul_bytes_and_long_commands_are_refused() -> None:
    assert parse_command("ls\0rm").error == "the command contains a NUL byte"
    too_long = parse_command("echo " + "x" * MAX_SOURCE)
    assert too_long.error is not None and too_long.commands == ()


def test_recursion_is_capped() -> None:
    nested = parse_command("find . -exec " * (MAX_DEPTH + 2) + "ls {} \\;")
    assert nested.error is not None and "nested" in nested.error
    quoted = "ls"
    for _ in range(MAX_DEPTH):
        quoted = f"sh -c {_sh_quote(quoted)}"
    assert texts(quoted) == ["ls"]
    assert "nested" in (parse_command(f"sh -c {_sh_quote(quoted)}").error or "")


def test_deep_syntax_nesting_is_capped() -> None:
    parsed = parse_command("echo " + "$(" * 300 + "ls" + ")" * 300)
    assert parsed.error is not None and "deeply" in parsed.error


def test_empty_source() -> None:
    assert parse_command("") == ParsedCommand("", (), None)
    assert parse_command("  \n# only a comment\n") == ParsedCommand(
        "  \n# only a comment\n", (), None
    )


def test_parsing_from_many_threads() -> None:
    results: list[list[str]] = []

    def work() -> None:
        for _ in range(50):
            results.append(texts("ls | sudo rm -rf x && echo $(id)"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [["ls", "rm -rf x", "echo $(id)", "id"]] * 200


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# --- words only known at run time: the command is not understood --------------------------


@pytest.mark.parametrize(
    "source",
    [
        "find . $x",
        'find . "$x"',
        "find . $(id)",
        "find . `id`",
        "find . $((1))",
        "find . {-exec,}",
        "find . -e{x,}ec",
        "find . {a..c}",
        'find . {"a",b}',
        "find . ~user",
        "find . ~+",
        "find . ~-",
        "find . a=~/x",
        "find . a=b:~",
        "find . -ex*c",
        "find . *",  # may match a file named -delete
        "find . ?x",
        "find . [-]delete",
        "ls | xargs sort",
        "cat < $f",
        "t='1 touch x'; timeout $t ls",
    ],
)
def test_words_only_known_at_run_time_make_it_inexact(source: str) -> None:
    assert any(c.inexact for c in parse_command(source).commands), source


@pytest.mark.parametrize(
    "source",
    [
        "find . '{-exec,}' \\{a,b\\} {a\\,b} {} {a}",
        "find . -name '*.py' -name \\*.txt -name \"?\"",
        "find . ~ ~/x '~user' a=\\~ --opt=~/x",
        "find src/* ./*",  # a pattern that cannot start with '-'
        "ls * ?.txt [ab]*",  # ls has no option that writes or runs
        "diff <(ls) <(ls -a)",
        "find . -ex''ec $'-exec' -e\\xec",
        "ls | xargs cat",
    ],
)
def test_words_read_exactly_are_not_inexact(source: str) -> None:
    assert not any(c.inexact for c in parse_command(source).commands), source


def test_brace_and_tilde_words_keep_their_source_text() -> None:
    cmd = parse_command("sort {-o,PWN} a.txt ~root").commands[0]
    assert cmd.argv == ("sort", "{-o,PWN}", "a.txt", "~root")
    assert cmd.static == (True, False, True, False)
    assert cmd.unknown == ("{-o,PWN}", "~root")
