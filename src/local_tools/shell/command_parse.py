"""Which simple commands a shell command runs, for approval (DESIGN §4).

`exec_cmd` runs `bash -c COMMAND`, and the policy checks each simple command's `text`
against the `execute:command` rules. tree-sitter-bash gives the syntax; on top of it
wrappers whose inner command is what runs are peeled (sudo, env, timeout, xargs,
`sh -c`, ...), and the commands that `find -exec` and here-documents run are added.
Whatever cannot be known before run time sets `error`, so the caller asks.

tree-sitter-bash quirks handled here: here-document bodies are scanned by hand (its
`$(...)` detection there is unreliable and it never finds backquotes); words after a
redirection target (`echo > f hi`) are arguments, not targets; a redirection after a
pipeline applies to its last command only; adjacent nodes with no space between them
(`$"x"`) are one word.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["MAX_DEPTH", "MAX_SOURCE", "ParsedCommand", "Redirect", "SimpleCommand", "parse_command"]

MAX_SOURCE = 64 * 1024  # bytes of command text analysed
MAX_DEPTH = 8  # nested re-parses: sh -c, eval, find -exec, here-document substitutions
_MAX_LEVEL = 100  # syntax-tree nesting walked, so deep input cannot exhaust the stack


@dataclass(frozen=True, slots=True)
class Redirect:
    op: str  # as written, with its fd: ">", "2>>", "&>", ">&", "<", "<<", "<<<"
    target: str  # the file (quotes removed when static), here-doc delimiter or here-string
    static: bool
    writes: bool  # output to a file: not a fd duplication, not /dev/null


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
    redirects: tuple[Redirect, ...] = ()
    stdin_redirected: bool = False  # a pipe, file, here-document or here-string, not a terminal
    stdout_redirected: bool = False  # a pipe, file or capture, not a terminal


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    source: str
    commands: tuple[SimpleCommand, ...]
    error: str | None


def parse_command(source: str) -> ParsedCommand:
    """Every simple command in `source`, in source order; `error` when that is not all."""
    try:
        commands, errors = _analyse(source, 0, 0, _Io())
    except _TooDeep:
        return ParsedCommand(source, (), "the command is nested too deeply to analyse")
    unique = list(dict.fromkeys(errors))
    return ParsedCommand(source, tuple(commands), "; ".join(unique[:3]) if unique else None)


# --- the parser ---------------------------------------------------------------------

_local = threading.local()  # Parser objects are not thread-safe: one per thread
_language: list[Any] = []


def _parser() -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        if not _language:
            _language.append(tree_sitter.Language(tree_sitter_bash.language()))
        parser = _local.parser = tree_sitter.Parser(_language[0])
    return parser


def _analyse(source: str, depth: int, level: int, io: _Io) -> tuple[list[SimpleCommand], list[str]]:
    if "\0" in source:
        return [], ["the command contains a NUL byte"]
    data = source.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SOURCE:
        return [], [f"the command is longer than {MAX_SOURCE} bytes"]
    root = _parser().parse(data).root_node
    walker = _Walker(data, depth, level)
    if root.has_error:
        walker.errors.append(_syntax_error(root, data))
    walker.walk(root, io, level)
    return walker.commands, walker.errors


def _syntax_error(root: Node, data: bytes) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        line = node.start_point[0] + 1
        if node.is_missing:
            return f"syntax error: missing {node.type!r} (line {line})"
        if node.type == "ERROR":
            near = data[node.start_byte : node.end_byte][:40].decode("utf-8", "replace")
            return f"syntax error near {near!r} (line {line})"
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return "syntax error"


class _TooDeep(Exception):
    """Nesting past _MAX_LEVEL: the whole analysis is abandoned."""


def _brief(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


# --- words --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Word:
    text: str  # quotes removed when static, else the source text
    static: bool


_ESCAPE = re.compile(r"\\(.)", re.S)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_ANSI_ESCAPE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", re.S
)
_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_STATIC_PARTS = frozenset(
    {"word", "number", "raw_string", "string", "ansi_c_string", "concatenation"}
)
_GLOB = re.compile(r"[*?\[]")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(body: str) -> str | None:
    """$'...' decoded; None when an escape is one we do not model (it then stays dynamic)."""
    out: list[str] = []
    pos = 0
    for m in _ANSI_ESCAPE.finditer(body):
        out.append(body[pos : m.start()])
        pos = m.end()
        esc = m.group(1)
        if esc[0] in "xuU" and len(esc) > 1:
            code = int(esc[1:], 16)
        elif esc[0] in "01234567":
            code = int(esc, 8)
        elif esc in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[esc])
            continue
        else:
            return None
        if not 0 < code <= 0x10FFFF:
            return None  # NUL ends the word in bash; beyond Unicode is not a character
        out.append(chr(code))
    out.append(body[pos:])
    return "".join(out)


def _quote(text: str) -> str:
    return shlex.quote(text) if not text or any(c.isspace() for c in text) else text


def _shown(word: _Word) -> str:
    return _quote(word.text) if word.static else word.text


# --- program names and assignments --------------------------------------------------

_SYSTEM_BIN = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"})
# Variables that change which program runs or make one run code (`PATH=. ls`,
# `HOME=evil git status` reads evil/.gitconfig): kept in the subject, so no rule
# naming only the command matches.
_RISKY_VAR = re.compile(
    r"PATH|HOME|IFS|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|EDITOR|VISUAL|BROWSER"
    r"|GCONV_PATH|LOCPATH|RIPGREP_CONFIG_PATH|JAVA_TOOL_OPTIONS|MANOPT"
    r"|(BASH|LD|DYLD|GIT|XDG|LESS|PYTHON|NODE|NPM_CONFIG|PERL|RUBY)\w*|\w*(PAGER|ASKPASS|_OPTIONS)"
)


def _program_name(text: str) -> str:
    """A system bin dir's program by its name (`/usr/bin/rm` is `rm`); other paths as written."""
    if text.startswith("/"):
        head, _, base = posixpath.normpath("/" + text.lstrip("/")).rpartition("/")
        if head in _SYSTEM_BIN:
            return base
    return text


def _risky(assignment: str) -> bool:
    return _RISKY_VAR.fullmatch(assignment.partition("=")[0].partition("[")[0]) is not None


# --- wrappers -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Wrapper:
    short: str = ""  # short options taking a value (-u bob, -ubob)
    long: frozenset[str] = frozenset()  # long options taking a value (--user bob)
    attached: str = ""  # short options whose value, if any, is attached (xargs -i[R])
    operands: int = 0  # operands before the command (timeout's DURATION)
    assignments: bool = False  # NAME=value words before the command (env, sudo)
    stop: frozenset[str] = frozenset()  # options after which no command follows (command -v)
    keep: frozenset[str] = frozenset()  # options that make the wrapper a subject too
    dynamic: frozenset[str] = frozenset()  # options that build the command at run time
    default: str = ""  # what runs when no command is given (xargs runs echo)


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(
        "ughpCDrtTUR",
        _fs("--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role",
            "--type", "--command-timeout", "--other-user", "--chroot"),
        assignments=True,
        stop=_fs("-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "-K",
                 "--remove-timestamp"),
        keep=_fs("-D", "--chdir", "-R", "--chroot"),  # where it runs changes what runs
    ),
    "doas": _Wrapper("uC", stop=_fs("-C")),
    "env": _Wrapper(
        "uCS", _fs("--unset", "--chdir", "--split-string"), assignments=True,
        keep=_fs("-C", "--chdir"), dynamic=_fs("-S", "--split-string"),
    ),
    "nice": _Wrapper("n", _fs("--adjustment")),
    "timeout": _Wrapper("sk", _fs("--signal", "--kill-after"), operands=1),
    "nohup": _Wrapper(),
    "time": _Wrapper("of", _fs("--output", "--format"), keep=_fs("-o", "--output")),  # writes
    "command": _Wrapper(stop=_fs("-v", "-V")),
    "exec": _Wrapper("a"),
    "stdbuf": _Wrapper("ioe", _fs("--input", "--output", "--error")),
    "ionice": _Wrapper("cnp", _fs("--class", "--classdata", "--pid"), stop=_fs("-p", "--pid")),
    "xargs": _Wrapper(
        "adEILnPs",
        _fs("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
            "--process-slot-var"),
        attached="eil", default="echo",
    ),
    "setsid": _Wrapper(),
    "builtin": _Wrapper(),
    "coproc": _Wrapper(),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Peeled:
    inner: list[_Word]
    keep: bool
    env: list[str]
    dynamic: bool


def _peel(words: Sequence[_Word], spec: _Wrapper) -> _Peeled | None:
    """The wrapped command, or None when there is none (the wrapper is the subject)."""
    i = 1
    seen: set[str] = set()
    env: list[str] = []
    while i < len(words) and words[i].static:
        text = words[i].text
        i += 1
        if text == "--":
            break
        if spec.assignments and re.match(r"[A-Za-z_]\w*=", text):
            env.append(text)
        elif text.startswith("--"):
            name, eq, _ = text.partition("=")
            seen.add(name)
            i += name in spec.long and not eq
        elif text.startswith("-"):
            for k, ch in enumerate(text[1:], 2):
                seen.add("-" + ch)
                if ch in spec.short or ch in spec.attached:
                    i += ch in spec.short and k == len(text)  # the value is the next word
                    break
        else:
            i -= 1
            break
    if seen & spec.stop:
        return None
    if seen & spec.dynamic:
        return _Peeled([], False, env, True)
    inner = list(words[i + spec.operands :])
    if not inner and spec.default:
        inner = [_Word(spec.default, True)]
    return _Peeled(inner, bool(seen & spec.keep), env, False) if inner else None


def _shell_script(words: Sequence[_Word]) -> _Word | None:
    """The `-c` string of `sh -c '...'`, or None when the shell runs a file or stdin."""
    i, command_mode = 1, False
    while i < len(words) and words[i].static:
        text = words[i].text
        if text in ("-", "--") or not text or text[0] not in "-+":
            break
        i += 1
        if text in ("--rcfile", "--init-file"):
            i += 1
        elif not text.startswith("--"):
            command_mode = command_mode or "c" in text
            i += text.count("o") + text.count("O")  # -o OPTION takes a value
    return words[i] if command_mode and i < len(words) else None


_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _find_commands(words: Sequence[_Word]) -> Iterator[list[_Word]]:
    """The commands of find's -exec/-execdir/-ok/-okdir actions, without the `;` or `+`."""
    i = 1
    while i < len(words):
        if not (words[i].static and words[i].text in _FIND_EXEC):
            i += 1
            continue
        j = i + 1
        while j < len(words) and not (
            words[j].static
            and (words[j].text == ";" or (words[j].text == "+" and words[j - 1].text == "{}"))
        ):
            j += 1
        if j > i + 1:
            yield list(words[i + 1 : j])
        i = j + 1


# --- here-document bodies -----------------------------------------------------------


def _closing_paren(text: str, i: int) -> int | None:
    """Index of the `)` closing a `$(` whose body starts at i (quotes and nesting skipped)."""
    depth, quote = 1, ""
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
            elif quote == '"' and text.startswith("$(", i):
                end = _closing_paren(text, i + 2)
                if end is None:
                    return None
                i = end
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _body_substitutions(body: str) -> list[str] | None:
    """The `$(...)` and backquoted commands of an unquoted here-document body."""
    found: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            i += 2
        elif body[i] == "`":
            end = body.find("`", i + 1)
            while end > 0 and body[end - 1] == "\\":
                end = body.find("`", end + 1)
            if end < 0:
                return None
            found.append(re.sub(r"\\([$`\\])", r"\1", body[i + 1 : end]))
            i = end + 1
        elif body.startswith("$((", i):
            i += 3  # arithmetic: substitutions inside it are found as we go
        elif body.startswith("$(", i):
            end = _closing_paren(body, i + 2)
            if end is None:
                return None
            found.append(body[i + 2 : end])
            i = end + 1
        else:
            i += 1
    return found


# --- the walk -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Io:
    stdin: bool = False  # from a pipe (redirections are looked at separately)
    stdout: bool = False  # to a pipe or capture
    redirects: tuple[Redirect, ...] = ()  # from an enclosing statement


_CAPTURED = _Io(stdout=True)
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def _fd_op(r: Redirect) -> tuple[str, str]:
    op = r.op.lstrip("0123456789")
    return r.op[: len(r.op) - len(op)], op


def _reads_stdin(r: Redirect) -> bool:
    fd, op = _fd_op(r)
    return fd in ("", "0") and op.startswith("<")


def _writes_stdout(r: Redirect) -> bool:
    fd, op = _fd_op(r)
    return op.startswith("&>") or (fd in ("", "1") and op.startswith(">"))


def _redirect_text(redirects: Sequence[Redirect]) -> list[str]:
    return [f"{r.op} {_quote(r.target) if r.static else r.target}" for r in redirects if r.writes]


class _Walker:
    def __init__(self, data: bytes, depth: int, level: int) -> None:
        self.data = data
        self.depth = depth
        self.level = level
        self.commands: list[SimpleCommand] = []
        self.errors: list[str] = []

    def src(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    # -- statements

    def walk(self, node: Node, io: _Io, level: int) -> None:
        if level > _MAX_LEVEL:
            raise _TooDeep
        kind = node.type
        if kind == "command":
            self._command(node, io, level, [])
        elif kind == "redirected_statement":
            self._redirected(node, io, level)
        elif kind == "pipeline":
            self._pipeline(node, io, level)
        elif kind == "list":
            for item in _list_items(node):
                self.walk(item, io, level + 1)
        elif kind in ("command_substitution", "process_substitution"):
            inner = _Io(stdin=self.src(node).startswith(">("), stdout=True)
            for child in node.named_children:
                self.walk(child, inner, level + 1)
        elif kind == "heredoc_redirect":
            self._heredoc(node, io, level)
        elif kind in ("variable_assignment", "declaration_command"):
            self._assignment(node, level)
        elif kind not in ("heredoc_body", "heredoc_start", "heredoc_end", "comment"):
            for child in node.named_children:
                self.walk(child, io, level + 1)

    def _redirected(self, node: Node, io: _Io, level: int) -> None:
        body = node.child_by_field_name("body")
        red_nodes = node.children_by_field_name("redirect")
        reds: list[Redirect] = []
        extra: list[Node] = []
        for r in red_nodes:
            self._redirects(r, reds, extra)
        # `cat <<EOF | sh`: tree-sitter puts the rest of the pipeline in the here-doc node
        piped = any(c.type == "pipeline" for r in red_nodes for c in r.named_children)
        outer = _Io(io.stdin, io.stdout or piped, io.redirects + tuple(reds))
        if body is not None and body.type == "command":
            self._command(body, outer, level + 1, extra)
        elif body is not None:
            if extra:
                self.errors.append("words after a redirection of a compound command")
            self.walk(body, outer, level + 1)
        elif extra:  # `> f cmd args`: the words are the command
            self._simple(self._words(extra), [], outer, level)
        elif any(r.writes for r in reds):
            self._append(
                SimpleCommand((), "", " ".join(_redirect_text(reds)), redirects=tuple(reds))
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
        found = _body_substitutions(body)
        if found is None:
            self.errors.append("a command substitution in a here-document is not closed")
            return
        for inner in found:
            self._nested(inner, self.depth, level, [], _CAPTURED, ())

    def _assignment(self, node: Node, level: int) -> None:
        """A bare `PATH=...` or `export PATH=...` is a subject: it changes what runs next."""
        assigns = [node] if node.type == "variable_assignment" else node.named_children
        if any(a.type == "variable_assignment" and _risky(self.src(a)) for a in assigns):
            keyword = () if node.type == "variable_assignment" else (node.children[0].type,)
            program = keyword[0] if keyword else ""
            self._append(
                SimpleCommand(keyword, program, self.src(node), static=(True,) * len(keyword))
            )
        for a in assigns:
            for child in a.named_children if a.type == "variable_assignment" else [a]:
                self.walk(child, _CAPTURED, level + 1)

    # -- simple commands

    def _command(self, node: Node, io: _Io, level: int, extra: list[Node]) -> None:
        word_nodes: list[Node] = []
        env: list[str] = []
        reds: list[Redirect] = []
        missing = False
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                if _risky(self.src(child)):
                    env.append(self.src(child))
            elif kind.endswith("_redirect"):
                self._redirects(child, reds, word_nodes)
            elif kind == "command_name":
                missing = child.is_missing or any(c.is_missing for c in child.children)
                word_nodes.extend(child.named_children or [child])
            elif kind != "comment":
                word_nodes.append(child)
        io = replace(io, redirects=io.redirects + tuple(reds))
        words = self._words(word_nodes + extra)
        if words and not missing:
            self._simple(words, env, io, level)
        inner = replace(io, redirects=())
        for child in node.named_children:
            kids = child.named_children if child.type == "variable_assignment" else [child]
            for k in kids:
                self.walk(k, inner, level + 1)

    def _simple(self, words: list[_Word], env: list[str], io: _Io, level: int) -> None:
        self._expand(words, env, io, (), self.depth, level)

    def _expand(
        self,
        words: list[_Word],
        env: list[str],
        io: _Io,
        wrappers: tuple[str, ...],
        depth: int,
        level: int,
    ) -> None:
        """Peel wrappers, then record the command (and what it runs: sh -c, find -exec)."""
        while True:
            head = words[0]
            if not head.static or _GLOB.search(head.text):
                why = f"the program {_brief(head.text)!r} is only known at run time"
                self._emit(words, env, io, wrappers, why)
                return
            name = _program_name(head.text)
            spec = _WRAPPERS.get(name)
            peeled = _peel(words, spec) if spec is not None else None
            if peeled is None:
                break
            if peeled.dynamic:
                self._emit(words, env, io, wrappers, f"{name} builds its command at run time")
                return
            if peeled.keep:
                self._emit(words, env, io, wrappers)
            env = env + [e for e in peeled.env if _risky(e)]
            wrappers = (*wrappers, name)
            if name == "xargs":  # GNU xargs gives the command /dev/null as stdin
                io = replace(io, stdin=True)
            words = peeled.inner
        if name in ("eval", "source", "."):
            self._emit(words, env, io, wrappers, f"{name} runs commands only known at run time")
            if name == "eval" and all(w.static for w in words[1:]):
                script = " ".join(w.text for w in words[1:])
                self._nested(script, depth, level, env, io, (*wrappers, name))
            return
        script = _shell_script(words) if name in _SHELLS else None
        if script is not None and not script.static:
            self._emit(words, env, io, wrappers, f"{name} -c runs a string built at run time")
        elif script is not None:
            self._nested(script.text, depth, level, env, io, (*wrappers, name))
        else:
            self._emit(words, env, io, wrappers)
        if name == "find":
            for inner in _find_commands(words):
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
        words: Sequence[_Word],
        env: list[str],
        io: _Io,
        wrappers: tuple[str, ...],
        error: str | None = None,
    ) -> None:
        head = words[0]
        program = _program_name(head.text) if head.static else head.text
        shown = [program if head.static else head.text, *map(_shown, words[1:])]
        reds = io.redirects
        self._append(
            SimpleCommand(
                argv=tuple(w.text for w in words),
                program=program,
                text=" ".join([*env, *shown, *_redirect_text(reds)]),
                wrappers=wrappers,
                dynamic=error is not None,
                static=tuple(w.static for w in words),
                redirects=reds,
                stdin_redirected=io.stdin or any(map(_reads_stdin, reds)),
                stdout_redirected=io.stdout or any(map(_writes_stdout, reds)),
            )
        )
        if error is not None:
            self.errors.append(error)

    def _append(self, command: SimpleCommand) -> None:
        self.commands.append(command)

    # -- words and redirections

    def _words(self, nodes: Sequence[Node]) -> list[_Word]:
        """Words of the command line; nodes with no space between them are one word."""
        words: list[_Word] = []
        start: Node | None = None
        prev: Node | None = None
        for node in nodes:
            word = self._word(node)
            if prev is not None and start is not None and node.start_byte == prev.end_byte:
                last = words[-1]
                static = last.static and word.static
                text = last.text + word.text if static else self._span(start, node)
                words[-1] = _Word(text, static)
            else:
                words.append(word)
                start = node
            prev = node
        return words

    def _span(self, first: Node, last: Node) -> str:
        return self.data[first.start_byte : last.end_byte].decode("utf-8", "surrogatepass")

    def _word(self, node: Node) -> _Word:
        kind, raw = node.type, self.src(node)
        if kind == "word":
            return _Word(_unescape(raw), True)
        if kind == "number":
            return _Word(raw, True)
        if kind == "raw_string":
            return _Word(raw[1:-1], True)
        if kind == "ansi_c_string":
            decoded = _ansi_c(raw[2:-1])
            return _Word(decoded, True) if decoded is not None else _Word(raw, False)
        if kind == "string" and all(c.type == "string_content" for c in node.named_children):
            return _Word(_DQ_ESCAPE.sub(lambda m: m.group(1).strip("\n"), raw[1:-1]), True)
        if kind == "concatenation" and all(c.type in _STATIC_PARTS for c in node.children):
            parts = [self._word(c) for c in node.children]
            if all(p.static for p in parts):
                return _Word("".join(p.text for p in parts), True)
        return _Word(raw, False)

    def _redirects(self, node: Node, out: list[Redirect], extra: list[Node]) -> None:
        """Append `node`'s redirections to `out`, and words tree-sitter put in it to `extra`."""
        kind = node.type
        ops = [c.type for c in node.children if not c.is_named]
        if kind == "file_redirect":
            fd = "".join(self.src(c) for c in node.children_by_field_name("descriptor"))
            op = fd + (ops[0] if ops else "")
            dests = node.children_by_field_name("destination")
            extra.extend(dests[1:])  # `echo > f hi`: hi is an argument
            if not dests:  # >&- closes a descriptor
                out.append(Redirect(op, "", True, False))
                return
            target = self._word(dests[0])
            dup = (
                op.endswith("&") and target.static and (target.text.isdigit() or target.text == "-")
            )
            to_file = ">" in op and not dup and not (target.static and target.text in _NOT_FILES)
            out.append(Redirect(op, target.text, target.static, to_file))
        elif kind == "herestring_redirect":
            target = self._words(node.named_children)
            out.append(Redirect("<<<", target[0].text if target else "", bool(target), False))
        elif kind == "heredoc_redirect":
            start = next((c for c in node.children if c.type == "heredoc_start"), None)
            out.append(
                Redirect(ops[0] if ops else "<<", self.src(start) if start else "", True, False)
            )
            for i, child in enumerate(node.children):
                if child.type.endswith("_redirect"):
                    self._redirects(child, out, extra)
                elif node.field_name_for_child(i) == "argument":
                    extra.append(child)  # `cat <<EOF x`: x is an argument


def _list_items(node: Node) -> list[Node]:
    """The statements of an `a && b || c` chain; tree-sitter nests it to the left."""
    items: list[Node] = []
    while node.type == "list" and node.named_children:
        kids = node.named_children
        items.extend(reversed(kids[1:]))
        node = kids[0]
    items.append(node)
    items.reverse()
    return items


def _adopt(c: SimpleCommand, env: list[str], wrappers: tuple[str, ...]) -> SimpleCommand:
    """A command from a nested script, under the wrappers and variables that ran it."""
    return replace(c, text=" ".join([*env, c.text]), wrappers=(*wrappers, *c.wrappers))
