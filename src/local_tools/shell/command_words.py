"""The text of a shell command's words, redirections and here-document bodies.

`command_parse` walks the statements of a command line; this module answers what one
piece of it says: a tree-sitter word or redirection node as the text bash would pass
(quotes removed and escapes decoded when that is known before run time, else the
source text), a program path as the name the policy matches, whether an assignment
changes what runs, and which commands an unquoted here-document body substitutes (`heredoc`).
It is separate because these are questions about text, not about shell structure:
they need no parser state beyond the source bytes, and the wrapper peeling uses the
same `Word`. It imports nothing from `command_parse`, so there is no import cycle.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "GLOB",
    "Redirect",
    "Word",
    "arithmetic_evaluates",
    "changes_program",
    "expansion_evaluates",
    "may_name_dotenv",
    "node_redirects",
    "node_text",
    "node_words",
    "program_name",
    "reads_stdin",
    "redirect_text",
    "risky",
    "shown",
    "writes_stdout",
]


@dataclass(frozen=True, slots=True)
class Redirect:
    op: str  # as written, with its fd: ">", "2>>", "&>", ">&", "<", "<<", "<<<"
    target: str  # the file (quotes removed when static), here-doc delimiter or here-string
    static: bool
    writes: bool  # output to a file: not a fd duplication, not /dev/null


# --- words --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command line as bash passes it.

    `static`: `text` is exactly what the program gets, apart from file-name patterns
    (`glob`). Brace expansion (`{a,b}`, `{1..3}`), tilde forms other than `~` and `~/`,
    and every `$`/backquote expansion make a word not static.
    """

    text: str  # quotes removed when static, else the source text
    static: bool
    glob: bool = False  # has an unquoted `*`, `?` or `[`: bash matches it against file names
    lead_glob: bool = False  # starts with one: a name starting with `-` may match
    pipe: bool = False  # a process substitution: bash passes a /dev/fd path


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
GLOB = re.compile(r"[*?\[]")


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


# Characters a word shows bare in a subject: shlex.quote's, any letter, and `~`.
# Anything else (quotes, blanks, `$`, `;`, `|`, `*` that is not a pattern, controls)
# is quoted, so two commands with different words never show the same subject
# (`touch "'a" "b'"` once showed as `touch 'a b'`, the subject of another command).
_PLAIN = re.compile(r"[\w@%+=:,./~-]+")
_PATTERN_PARTS = re.compile(r"([*?\[\]!^]+)")


def _quote(text: str, *, glob: bool = False) -> str:
    """`text` as shell input that reads back as this one word (shlex.quote, where needed).

    `glob`: its `*`, `?` and `[...]` are patterns and stay bare; the rest is quoted."""
    if _PLAIN.fullmatch(text) or text == "{}":  # `{}` is no brace expansion: as bash reads it
        return text
    if not glob:
        return shlex.quote(text)
    parts = _PATTERN_PARTS.split(text)
    return "".join(
        p if i % 2 or _PLAIN.fullmatch(p) else shlex.quote(p) for i, p in enumerate(parts) if p
    )


def shown(word: Word) -> str:
    """The word as it appears in a policy subject: quoted only when it must be."""
    return _quote(word.text, glob=word.glob) if word.static else word.text


def node_text(data: bytes, node: Node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")


def node_words(data: bytes, nodes: Sequence[Node]) -> list[Word]:
    """Words of the command line; nodes with no space between them are one word."""
    groups: list[list[Node]] = []
    for node in nodes:
        if groups and node.start_byte == groups[-1][-1].end_byte:
            groups[-1].append(node)
        else:
            groups.append([node])
    return [_group_word(data, group) for group in groups]


def _group_word(data: bytes, group: Sequence[Node]) -> Word:
    if len(group) == 1 and group[0].type == "process_substitution":
        return Word(node_text(data, group[0]), False, pipe=True)
    parts = [_node_word(data, n) for n in group]
    raw = _span(data, group[0], group[-1])
    if not all(p.static for p in parts):
        return Word(raw, False)
    shape = _shape(raw)
    if shape.braces or shape.tilde:
        return Word(raw, False)  # bash rewrites it: the text is not what runs
    return Word("".join(p.text for p in parts), True, shape.glob, shape.lead_glob)


# --- what bash does to a static word's unquoted characters ---------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    braces: bool  # brace expansion: {a,b} or {x..y}
    tilde: bool  # a tilde form other than `~` / `~/...` at the start (~user, ~+, ~-, a=~)
    glob: bool
    lead_glob: bool


_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(\.\.-?\d+)?")
_ASSIGNMENT_LIKE = re.compile(r"[A-Za-z_]\w*=")


def _unquoted(raw: str) -> list[tuple[str, bool]]:
    """The characters of a static word's source after quote removal, each with whether
    it was quoted or escaped (bash expands only unquoted braces, tildes and patterns)."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            out.extend((ch, True) for ch in raw[i + 1 : i + 2] if ch != "\n")
            i += 2
        elif c == "'" or raw.startswith("$'", i):
            start = i + (2 if c == "$" else 1)
            end = start
            while end < n and raw[end] != "'":
                end += 2 if c == "$" and raw[end] == "\\" else 1
            out.extend((ch, True) for ch in raw[start:end])
            i = end + 1
        elif c == '"' or raw.startswith('$"', i):
            start = i + (2 if c == "$" else 1)
            end = start
            while end < n and raw[end] != '"':
                end += 2 if raw[end] == "\\" else 1
            out.extend((ch, True) for ch in raw[start:end])
            i = end + 1
        else:
            out.append((c, False))
            i += 1
    return out


def _shape(raw: str) -> _Shape:
    chars = _unquoted(raw)
    glob = any(not q and c in "*?[" for c, q in chars)
    lead_glob = bool(chars) and not chars[0][1] and chars[0][0] in "*?["
    return _Shape(_has_braces(chars), _odd_tilde(chars), glob, lead_glob)


def _has_braces(chars: Sequence[tuple[str, bool]]) -> bool:
    """An unquoted `{...}` holding an unquoted `,` or a sequence `x..y` (over-approximated:
    bash leaves some of these alone, which only makes us ask when it need not)."""
    opens: list[int] = []
    for k, (c, quoted) in enumerate(chars):
        if quoted:
            continue
        if c == "{":
            opens.append(k)
        elif c == "}" and opens:
            start = opens.pop()
            inner = chars[start + 1 : k]
            if any(ch == "," and not q for ch, q in inner):
                return True
            if _SEQUENCE.fullmatch("".join(ch for ch, _ in inner)):
                return True
    return False


def _odd_tilde(chars: Sequence[tuple[str, bool]]) -> bool:
    """A tilde prefix bash expands to something other than $HOME: `~user`, `~+`, `~-`,
    `~1`; or any tilde after `=` or `:` in a `NAME=value` word (bash expands those too,
    so its text is not what runs)."""
    text = "".join(c for c, _ in chars)
    if chars and chars[0] == ("~", False):
        end = next((k for k, (c, q) in enumerate(chars) if c == "/" and not q), len(chars))
        if end > 1:
            return True
    if _ASSIGNMENT_LIKE.match(text) and all(not q for _, q in chars[: text.index("=") + 1]):
        value = chars[text.index("=") + 1 :]
        for k, (c, q) in enumerate(value):
            if c == "~" and not q and (k == 0 or value[k - 1] == (":", False)):
                return True
    return False


def _span(data: bytes, first: Node, last: Node) -> str:
    return data[first.start_byte : last.end_byte].decode("utf-8", "surrogatepass")


def _node_word(data: bytes, node: Node) -> Word:
    kind, raw = node.type, node_text(data, node)
    if kind == "word":
        return Word(_unescape(raw), True)
    if kind == "number":
        return Word(raw, True)
    if kind == "raw_string":
        return Word(raw[1:-1], True)
    if kind == "ansi_c_string":
        decoded = _ansi_c(raw[2:-1])
        return Word(decoded, True) if decoded is not None else Word(raw, False)
    if kind == "string" and all(c.type == "string_content" for c in node.named_children):
        return Word(_DQ_ESCAPE.sub(lambda m: m.group(1).strip("\n"), raw[1:-1]), True)
    if kind == "concatenation" and all(c.type in _STATIC_PARTS for c in node.children):
        parts = [_node_word(data, c) for c in node.children]
        if all(p.static for p in parts):
            return Word("".join(p.text for p in parts), True)
    return Word(raw, False)


# --- program names and assignments --------------------------------------------------

_SYSTEM_BIN = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
# Variables that change which program runs or make one run code (`PATH=. ls`,
# `HOME=evil git status` reads evil/.gitconfig), or what a pattern matches (GLOBIGNORE
# makes `?env` match `.env`): kept in the subject, so no rule naming only the command
# matches.
_RISKY_VAR = re.compile(
    r"PATH|HOME|IFS|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|EDITOR|VISUAL|BROWSER"
    r"|GLOBIGNORE|GLOBSORT|FIGNORE"
    r"|GCONV_PATH|LOCPATH|RIPGREP_CONFIG_PATH|JAVA_TOOL_OPTIONS|MANOPT"
    r"|(BASH|LD|DYLD|GIT|XDG|LESS|PYTHON|NODE|NPM_CONFIG|PERL|RUBY)\w*|\w*(PAGER|ASKPASS|_OPTIONS)"
)


def program_name(text: str) -> str:
    """A system bin dir's program by its name (`/usr/bin/rm` is `rm`); other paths as written."""
    if text.startswith("/"):
        head, _, base = posixpath.normpath("/" + text.lstrip("/")).rpartition("/")
        if head in _SYSTEM_BIN:
            return base
    return text


def risky(assignment: str) -> bool:
    return changes_program(assignment.partition("=")[0].partition("[")[0])


def changes_program(name: str) -> bool:
    """A variable that changes which program runs or makes one run code."""
    return name.startswith("BASH_FUNC_") or _RISKY_VAR.fullmatch(name) is not None


# --- expansions that evaluate text as code ---------------------------------------------
# bash evaluates a variable's value as an arithmetic expression in `${x:OFFSET}`,
# `${a[SUB]}` and `$((...))`, follows `${!x}`, and prompt-expands `${x@P}`: a value like
# `a[$(cmd)]` then runs cmd. What the value is is known only at run time.

_PARAMETER = re.compile(r"\$\{#?([A-Za-z_]\w*|\d+|[@*#?$!-])(\[[^\]]*\])?(.?)(.?)")
_PLAIN_SUB = re.compile(r"\[(-?\d+|[@*])\]")
_NUMBER_RANGE = re.compile(r":\s*-?\d+\s*(:\s*-?\d+\s*)?\}")
_SAFE_TRANSFORMS = "QULua"  # quote or change case: nothing is evaluated


def expansion_evaluates(text: str) -> str | None:
    """Why a `${...}` (text starting there) may run code at run time; None if it cannot."""
    if text.startswith("${!") and not text.startswith("${!}"):
        return "an indirect expansion ${!...} is resolved at run time"
    m = _PARAMETER.match(text)
    if m is None:
        return None  # not a parameter expansion bash accepts
    sub, op, nxt = m.group(2), m.group(3), m.group(4)
    if sub is not None and not _PLAIN_SUB.fullmatch(sub):
        return "an array subscript is evaluated as arithmetic at run time"
    if op == "@" and nxt not in _SAFE_TRANSFORMS:
        return f"the ${{...@{nxt}}} transformation expands the value at run time"
    if op == ":" and nxt not in "-=?+" and not _NUMBER_RANGE.match(text, m.start(3)):
        return "a substring offset is evaluated as arithmetic at run time"
    return None


_NAME = re.compile(r"[A-Za-z_]\w*")
_NUMBER_SET = re.compile(r"([A-Za-z_]\w*)\s*=\s*-?\d+\b(?!\s*[=\[])")


def arithmetic_evaluates(text: str) -> bool:
    """Whether an arithmetic expression's text may evaluate an unknown value as code.

    Numbers, operators and names the expression itself sets to a number first
    (`for ((i=0; i<3; i++))`) are safe; any other name's value is evaluated.
    """
    if re.search(r"[$`\[\\'\"]", text):
        return True
    numbers = {m.group(1) for m in _NUMBER_SET.finditer(text)}
    for m in _NAME.finditer(text):
        if m.group() not in numbers:
            return True
        first = _NUMBER_SET.search(text)
        if first is not None and m.start() < first.start():
            return True  # used before it is set
    return False


# --- .env secrets named by a pattern -----------------------------------------------------
# `cat .env` asks by rule, but bash expands `.en?`, `*.env` or `.{env,x}` to the same
# file; without looking at the file system, a pattern that could name one asks too.

_DOTENV_NAMES = (".env", "x.env", ".env.local")
_DOTENV_SAMPLES = (".example", ".sample", ".template")
_BRACES = re.compile(r"\{([^{}]*)\}")


def _brace_alternatives(text: str, limit: int = 64) -> list[str]:
    out: list[str] = []
    todo = [text]
    while todo and len(out) + len(todo) <= limit:
        word = todo.pop()
        m = next((b for b in _BRACES.finditer(word) if "," in b.group(1)), None)
        if m is None:
            out.append(word)
            continue
        todo.extend(word[: m.start()] + alt + word[m.end() :] for alt in m.group(1).split(","))
    return out + todo


def may_name_dotenv(text: str, *, literal: bool = False) -> bool:
    """A static word that bash may expand (glob, braces) to a `.env`-style file name;
    `literal`: a plain name counts too (the rules see only words, not every target)."""
    if not literal and not GLOB.search(text) and "{" not in text:
        return False
    for word in _brace_alternatives(text):
        name = word.rstrip("/").rpartition("/")[2]
        if not GLOB.search(name):
            if name.endswith(_DOTENV_SAMPLES):
                continue  # read:file allows these
            if name == ".env" or name.endswith(".env") or name.startswith(".env."):
                return True
            continue
        for candidate in _DOTENV_NAMES:
            # bash: a leading dot is matched only by a literal one
            if candidate.startswith(".") and not name.startswith("."):
                continue
            if fnmatch.fnmatchcase(candidate, name):
                return True
    return False


# --- redirections -------------------------------------------------------------------

_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def _fd_op(r: Redirect) -> tuple[str, str]:
    op = r.op.lstrip("0123456789")
    return r.op[: len(r.op) - len(op)], op


def reads_stdin(r: Redirect) -> bool:
    fd, op = _fd_op(r)
    return fd in ("", "0") and op.startswith("<")


def writes_stdout(r: Redirect) -> bool:
    fd, op = _fd_op(r)
    return op.startswith("&>") or (fd in ("", "1") and op.startswith(">"))


def redirect_text(redirects: Sequence[Redirect]) -> list[str]:
    return [
        f"{r.op} {_quote(r.target, glob=True) if r.static else r.target}"
        for r in redirects
        if r.writes
    ]


def node_redirects(data: bytes, node: Node, out: list[Redirect], extra: list[Node]) -> None:
    """Append `node`'s redirections to `out`, and words tree-sitter put in it to `extra`."""
    kind = node.type
    ops = [c.type for c in node.children if not c.is_named]
    if kind == "file_redirect":
        fd = "".join(node_text(data, c) for c in node.children_by_field_name("descriptor"))
        op = fd + (ops[0] if ops else "")
        dests = node.children_by_field_name("destination")
        extra.extend(dests[1:])  # `echo > f hi`: hi is an argument
        if not dests:  # >&- closes a descriptor
            out.append(Redirect(op, "", True, False))
            return
        target = node_words(data, dests[:1])[0]
        dup = op.endswith("&") and target.static and (target.text.isdigit() or target.text == "-")
        to_file = ">" in op and not dup and not (target.static and target.text in _NOT_FILES)
        out.append(Redirect(op, target.text, target.static, to_file))
    elif kind == "herestring_redirect":
        targets = node_words(data, node.named_children)
        out.append(Redirect("<<<", targets[0].text if targets else "", bool(targets), False))
    elif kind == "heredoc_redirect":
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        delimiter = node_text(data, start) if start else ""
        out.append(Redirect(ops[0] if ops else "<<", delimiter, True, False))
        for i, child in enumerate(node.children):
            if child.type.endswith("_redirect"):
                node_redirects(data, child, out, extra)
            elif node.field_name_for_child(i) == "argument":
                extra.append(child)  # `cat <<EOF x`: x is an argument
