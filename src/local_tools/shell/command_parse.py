"""Which simple commands a shell command runs, for approval (DESIGN §4).

`exec_cmd` runs `bash -c COMMAND`, and the policy checks each simple command's `text`
against the `execute:command` rules. tree-sitter-bash gives the syntax; on top of it
wrappers whose inner command is what runs are peeled (sudo, env, timeout, xargs,
`sh -c`, ...), and the commands that `find -exec` and here-documents run are added.
Whatever cannot be known before run time sets `error`, so the caller asks.

This module walks the syntax tree; what a word or redirection says is in
`command_words`, which command a wrapper runs in `command_wrappers`, the parser and
tree helpers in `bash_syntax`, a command's text for the rules and whether it is exact
in `command_text`. tree-sitter-bash quirks handled (here or in those modules):
here-document bodies are scanned by hand in `heredoc` (its `$(...)` detection there is
unreliable and it never finds backquotes); words after a redirection target
(`echo > f hi`) are arguments, not targets; a redirection after a pipeline applies
to its last command only; adjacent nodes with no space between them (`$"x"`) are one
word. Where it splits the text elsewhere than bash does (`\\r`, `\\v`, `\\f`; see
`command_separators`), the command is not understood.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from local_tools.shell.bash_syntax import bash_parser, descendants, list_items, syntax_error
from local_tools.shell.command_separators import dropped_dash, separator_mismatch
from local_tools.shell.command_text import NOT_FILE_OPS, brief, clusters_shown, inexact
from local_tools.shell.command_words import (
    GLOB,
    Redirect,
    Word,
    arithmetic_evaluates,
    expansion_evaluates,
    may_name_dotenv,
    node_redirects,
    node_text,
    node_words,
    program_name,
    reads_stdin,
    redirect_text,
    risky,
    shown,
    writes_stdout,
)
from local_tools.shell.command_wrappers import (
    SHELLS,
    WRAPPERS,
    find_commands,
    peel,
    shell_script,
)
from local_tools.shell.heredoc import UNSURE_END, body_evaluates, body_substitutions

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["MAX_DEPTH", "MAX_SOURCE", "ParsedCommand", "Redirect", "SimpleCommand", "parse_command"]

MAX_SOURCE = 64 * 1024  # bytes of command text analysed
MAX_DEPTH = 8  # nested re-parses: sh -c, eval, find -exec, here-document substitutions
_MAX_LEVEL = 100  # syntax-tree nesting walked, so deep input cannot exhaust the stack


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One program run; `text` is the policy subject.

    An empty `argv` is a statement that runs no program but matters: a redirection
    alone (`> f` truncates f) or an assignment to a variable that changes what later
    commands run (`PATH=./bin`).
    """

    argv: tuple[str, ...]
    program: str
    text: str
    wrappers: tuple[str, ...] = ()
    dynamic: bool = False
    static: tuple[bool, ...] = ()  # per argv word: its text is exactly what the shell passes
    globs: tuple[bool, ...] = ()  # per argv word: bash matches it against file names
    redirects: tuple[Redirect, ...] = ()
    stdin_redirected: bool = False  # a pipe, file, here-document or here-string, not a terminal
    stdout_redirected: bool = False  # a pipe, file or capture, not a terminal
    # Why the words the program gets are not known exactly before it runs (an expansion,
    # a brace, a pattern that may be an option): the command is then not understood.
    inexact: str | None = None
    # Arguments and file redirection targets only known at run time, as written: any of
    # them may name a path outside the workspace.
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    source: str
    commands: tuple[SimpleCommand, ...]
    error: str | None
    # The parser did not split the text where bash does (`ls\r# ; cat ~/.ssh/id`):
    # `commands` may miss what bash runs, and the paths it names.
    misread: bool = False


def parse_command(source: str) -> ParsedCommand:
    """Every simple command in `source`, in source order; `error` when that is not all."""
    try:
        commands, errors = _analyse(source, 0, 0, _Io())
    except _TooDeep:
        return ParsedCommand(source, (), "the command is nested too deeply to analyse")
    unique = list(dict.fromkeys(errors))
    misread = any(e.startswith(_MISREAD) for e in unique)
    error = "; ".join(unique[:3]) if unique else None
    return ParsedCommand(source, tuple(commands), error, misread)


_MISREAD = "not read as bash reads it: "


# --- the parser ---------------------------------------------------------------------


def _analyse(source: str, depth: int, level: int, io: _Io) -> tuple[list[SimpleCommand], list[str]]:
    if "\0" in source:
        return [], ["the command contains a NUL byte"]
    data = source.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SOURCE:
        return [], [f"the command is longer than {MAX_SOURCE} bytes"]
    root = bash_parser().parse(data).root_node
    walker = _Walker(data, depth, level)
    if root.has_error:
        walker.errors.append(syntax_error(root, data))
    else:
        mismatch = separator_mismatch(root, data)
        if mismatch is not None:
            walker.errors.append(_MISREAD + mismatch)
    walker.walk(root, io, level)
    return walker.commands, walker.errors


class _TooDeep(Exception):
    """Nesting past _MAX_LEVEL: the whole analysis is abandoned."""


# --- the walk -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Io:
    stdin: bool = False  # from a pipe (redirections are looked at separately)
    stdout: bool = False  # to a pipe or capture
    redirects: tuple[Redirect, ...] = ()  # from an enclosing statement


_CAPTURED = _Io(stdout=True)


class _Walker:
    def __init__(self, data: bytes, depth: int, level: int) -> None:
        self.data = data
        self.depth = depth
        self.level = level
        self.commands: list[SimpleCommand] = []
        self.errors: list[str] = []

    def src(self, node: Node) -> str:
        return node_text(self.data, node)

    # -- statements

    def walk(self, node: Node, io: _Io, level: int) -> None:
        if level > _MAX_LEVEL:
            raise _TooDeep
        kind = node.type
        why = self._evaluates(node)
        if why is not None:
            self.errors.append(why)
        if kind == "command":
            self._command(node, io, level, [])
        elif kind == "redirected_statement":
            self._redirected(node, io, level)
        elif kind == "pipeline":
            self._pipeline(node, io, level)
        elif kind == "list":
            for item in list_items(node):
                self.walk(item, io, level + 1)
        elif kind in ("command_substitution", "process_substitution"):
            inner = _Io(stdin=self.src(node).startswith(">("), stdout=True)
            for child in node.named_children:
                self.walk(child, inner, level + 1)
        elif kind == "heredoc_redirect":
            self._heredoc(node, io, level)
        elif kind in ("variable_assignment", "declaration_command"):
            self._assignment(node, level)
        elif kind in ("for_statement", "select_statement"):
            self._loop(node, io, level)
        elif kind not in ("heredoc_body", "heredoc_start", "heredoc_end", "comment"):
            for child in node.named_children:
                self.walk(child, io, level + 1)

    def _evaluates(self, node: Node) -> str | None:
        """Why `node` may run code hidden in a variable's value (see `expansion_evaluates`)."""
        kind = node.type
        arithmetic = kind in ("arithmetic_expansion", "c_style_for_statement") or (
            kind == "compound_statement" and bool(node.children) and node.children[0].type == "(("
        )
        if arithmetic:
            inner = self.src(node)
            if kind == "c_style_for_statement":
                body = node.child_by_field_name("body")
                inner = inner[: body.start_byte - node.start_byte] if body else inner
                inner = inner.partition("((")[2].rpartition("))")[0]
            else:
                inner = inner[2:-1] if inner.startswith("$[") else inner.strip("$()")
            if arithmetic_evaluates(inner):
                return "arithmetic is evaluated at run time (a value like a[$(cmd)] runs cmd)"
        if kind == "expansion":
            return expansion_evaluates(self.src(node))
        if kind == "test_command":
            ops = {self.src(c) for c in descendants(node) if c.type == "test_operator"}
            # -v/-R evaluate a subscript in the name; [[ ]] compares numbers as arithmetic
            numeric = self.src(node).startswith("[[") and ops & _ARITH_TESTS
            if ops & {"-v", "-R"} or numeric:
                return "a test that evaluates a name or arithmetic at run time"
        return None

    def _redirected(self, node: Node, io: _Io, level: int) -> None:
        body = node.child_by_field_name("body")
        red_nodes = node.children_by_field_name("redirect")
        reds: list[Redirect] = []
        extra: list[Node] = []
        for r in red_nodes:
            node_redirects(self.data, r, reds, extra)
        # `cat <<EOF | sh`: tree-sitter puts the rest of the pipeline in the here-doc node
        piped = any(c.type == "pipeline" for r in red_nodes for c in r.named_children)
        outer = _Io(io.stdin, io.stdout or piped, io.redirects + tuple(reds))
        if body is not None and body.type == "command":
            dash = dropped_dash(node, self.data) is not None  # `python3 - <<EOF`
            self._command(body, outer, level + 1, extra, dash=dash)
        elif body is not None:
            if extra:
                self.errors.append("words after a redirection of a compound command")
            self.walk(body, outer, level + 1)
        elif extra:  # `> f cmd args`: the words are the command
            self._simple(node_words(self.data, extra), [], outer, level)
        elif any(r.writes for r in reds):
            self._append(
                SimpleCommand((), "", " ".join(redirect_text(reds)), redirects=tuple(reds))
            )
        for r in red_nodes:
            self.walk(r, replace(io, redirects=()), level + 1)

    def _pipeline(self, node: Node, io: _Io, level: int) -> None:
        kids = node.children
        pipes = [i for i, k in enumerate(kids) if k.type in ("|", "|&")]
        for i, child in enumerate(kids):
            if not child.is_named:
                continue
            piped_out = bool(pipes) and i < pipes[-1]
            self.walk(
                child,
                _Io(
                    stdin=io.stdin or (bool(pipes) and i > pipes[0]),
                    stdout=io.stdout or piped_out,
                    # bash: `a | b > f` redirects b only
                    redirects=() if piped_out else io.redirects,
                ),
                level + 1,
            )

    def _heredoc(self, node: Node, io: _Io, level: int) -> None:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = start is not None and any(q in self.src(start) for q in "'\"\\")
        for child in node.named_children:
            if child.type == "heredoc_body":
                if not quoted:
                    self._heredoc_body(self.src(child), level)
            elif child.type not in ("heredoc_start", "heredoc_end"):
                self.walk(child, replace(io, redirects=()), level + 1)

    def _heredoc_body(self, body: str, level: int) -> None:
        why = body_evaluates(body)
        if why is not None:
            self.errors.append(why)
        found = body_substitutions(body)
        if found is None:
            self.errors.append("a command substitution in a here-document is not closed")
            return
        for inner in found:
            if UNSURE_END.search(inner):
                # Where bash ends this `$(` is not sure to be where the bracket count
                # ended it: a comment runs to the line's end past a `)`, a `case`
                # pattern has an unmatched `)`, a nested here-document holds any text.
                self.errors.append(
                    "a command substitution in a here-document holds a comment, a case "
                    "or a here-document, so where it ends is not read exactly"
                )
            self._nested(inner, self.depth, level, [], _CAPTURED, ())

    def _assignment(self, node: Node, level: int) -> None:
        """A bare `PATH=...` or `export PATH=...` is a subject: it changes what runs next.
        So is a value bash may evaluate later (`x='a[$(cmd)]'; echo $((x))`, declare -i/-n)."""
        assigns = [node] if node.type == "variable_assignment" else node.named_children
        texts = [self.src(a) for a in assigns]
        if any(risky(t) or _DEFERRED.search(t) or t.startswith(("-", "+")) for t in texts):
            keyword = () if node.type == "variable_assignment" else (node.children[0].type,)
            program = keyword[0] if keyword else ""
            self._append(
                SimpleCommand(keyword, program, self.src(node), static=(True,) * len(keyword))
            )
        for a in assigns:
            for child in a.named_children if a.type == "variable_assignment" else [a]:
                self.walk(child, _CAPTURED, level + 1)

    def _loop(self, node: Node, io: _Io, level: int) -> None:
        """`for PATH in ./bin; do ls; done` assigns like `PATH=./bin` does."""
        var = node.child_by_field_name("variable")
        if var is not None and risky(self.src(var) + "="):
            body = node.child_by_field_name("body")
            head = self.src(node)[: (body.start_byte - node.start_byte) if body else None]
            self._append(SimpleCommand((), "", head.strip().rstrip(";").strip()))
        for child in node.named_children:
            self.walk(child, io, level + 1)

    # -- simple commands

    def _command(
        self, node: Node, io: _Io, level: int, extra: list[Node], *, dash: bool = False
    ) -> None:
        word_nodes: list[Node] = []
        env: list[str] = []
        reds: list[Redirect] = []
        missing = False
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                if risky(self.src(child)):
                    env.append(self.src(child))
            elif kind.endswith("_redirect"):
                node_redirects(self.data, child, reds, word_nodes)
            elif kind == "command_name":
                missing = child.is_missing or any(c.is_missing for c in child.children)
                word_nodes.extend(child.named_children or [child])
            elif kind != "comment":
                word_nodes.append(child)
        io = replace(io, redirects=io.redirects + tuple(reds))
        words = node_words(self.data, word_nodes)
        words += [Word("-", True)] * dash + node_words(self.data, extra)
        if words and not missing:
            self._simple(words, env, io, level)
        inner = replace(io, redirects=())
        for child in node.named_children:
            kids = child.named_children if child.type == "variable_assignment" else [child]
            for k in kids:
                self.walk(k, inner, level + 1)

    def _simple(self, words: list[Word], env: list[str], io: _Io, level: int) -> None:
        self._expand(words, env, io, (), self.depth, level)

    def _expand(
        self,
        words: list[Word],
        env: list[str],
        io: _Io,
        wrappers: tuple[str, ...],
        depth: int,
        level: int,
    ) -> None:
        """Peel wrappers, then record the command (and what it runs: sh -c, find -exec)."""
        while True:
            head = words[0]
            if not head.static or GLOB.search(head.text):
                why = f"the program {brief(head.text)!r} is only known at run time"
                self._emit(words, env, io, wrappers, why)
                return
            name = program_name(head.text)
            spec = WRAPPERS.get(name)
            peeled = peel(words, spec) if spec is not None else None
            if peeled is None:
                break
            if peeled.dynamic:
                self._emit(words, env, io, wrappers, f"{name} builds its command at run time")
                return
            if peeled.keep:
                self._emit(words, env, io, wrappers)
            env = env + [e for e in peeled.env if risky(e)]
            wrappers = (*wrappers, name)
            if name == "xargs":  # GNU xargs gives the command /dev/null as stdin
                io = replace(io, stdin=True)
            words = peeled.inner
        if name in ("eval", "source", "."):
            self._emit(words, env, io, wrappers, f"{name} runs commands only known at run time")
            if name == "eval" and all(w.static for w in words[1:]):
                code = " ".join(w.text for w in words[1:])
                self._nested(code, depth, level, env, io, (*wrappers, name))
            return
        script = shell_script(words) if name in SHELLS else None
        if script is not None and not script.static:
            self._emit(words, env, io, wrappers, f"{name} -c runs a string built at run time")
        elif script is not None:
            self._nested(script.text, depth, level, env, io, (*wrappers, name))
        else:
            self._emit(words, env, io, wrappers)
        if name == "find":
            for inner in find_commands(words):
                if depth >= MAX_DEPTH:
                    self.errors.append(f"commands nested more than {MAX_DEPTH} deep")
                    return
                self._expand(
                    inner, env, replace(io, redirects=()), (*wrappers, name), depth + 1, level
                )

    def _nested(
        self,
        script: str,
        depth: int,
        level: int,
        env: list[str],
        io: _Io,
        wrappers: tuple[str, ...],
    ) -> None:
        if depth >= MAX_DEPTH:
            self.errors.append(f"commands nested more than {MAX_DEPTH} deep")
            return
        commands, errors = _analyse(script, depth + 1, level + 1, io)
        self.errors.extend(errors)
        for c in commands:
            self._append(_adopt(c, env, wrappers))

    def _emit(
        self,
        words: Sequence[Word],
        env: list[str],
        io: _Io,
        wrappers: tuple[str, ...],
        error: str | None = None,
    ) -> None:
        head = words[0]
        argv = [w.text for w in words]
        program = program_name(head.text) if head.static else head.text
        args = [shown(w) for w in words[1:]]
        if head.static and all(w.static for w in words[1:]):
            args = clusters_shown(program, words[1:])
        subject = [shown(Word(program, True)) if head.static else head.text, *args]
        reds = io.redirects
        # a redirection is not in the subject, so `cat < .env` is checked here too
        if error is None and (
            any(may_name_dotenv(w.text) for w in words if w.static)
            or any(may_name_dotenv(r.target, literal=True) for r in reds if r.static)
        ):
            error = "a pattern may name a .env file"
        files = [r for r in reds if r.op.lstrip("0123456789&") not in NOT_FILE_OPS]
        unknown = [w.text for w in words[1:] if not w.static and not w.pipe]
        unknown += [r.target for r in files if not r.static]
        self._append(
            SimpleCommand(
                argv=tuple(argv),
                program=program,
                text=" ".join([*env, *subject, *redirect_text(reds)]),
                wrappers=wrappers,
                dynamic=error is not None,
                static=tuple(w.static for w in words),
                globs=tuple(w.glob for w in words),
                redirects=reds,
                stdin_redirected=io.stdin or any(map(reads_stdin, reds)),
                stdout_redirected=io.stdout or any(map(writes_stdout, reds)),
                inexact=inexact(program, words, files, wrappers),
                unknown=tuple(dict.fromkeys(unknown)),
            )
        )
        if error is not None:
            self.errors.append(error)

    def _append(self, command: SimpleCommand) -> None:
        self.commands.append(command)


_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
# In an assignment: a command's output, or a subscript, that bash may evaluate later
_DEFERRED = re.compile(r"\$\(|`|\[")


def _adopt(c: SimpleCommand, env: list[str], wrappers: tuple[str, ...]) -> SimpleCommand:
    """A command from a nested script, under the wrappers and variables that ran it."""
    return replace(c, text=" ".join([*env, c.text]), wrappers=(*wrappers, *c.wrappers))
