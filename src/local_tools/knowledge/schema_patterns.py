"""A JSON Schema's regexes checked before they run: none may backtrack super-linearly.

`jsonschema` runs `pattern`, `patternProperties` and `propertyNames` patterns with
Python's backtracking `re`, under the interpreter lock: `^(a|aa)+$` against 40
characters froze the process for minutes, and the schema is the model's text. So a
pattern is refused (INVALID_INPUT naming it) when its structure allows that:

- a repeat with no upper bound (or one above `_MAX_BOUNDED`) whose body holds another
  repeat or an alternation (`(a+)+`, `(a|aa)*`, `(\\w+\\s?)*`): exponential;
- more than `_MAX_UNBOUNDED` unbounded repeats in all (`a*a*a*b`): a high polynomial.

Patterns people write for data (`^[A-Z]{3}-\\d+$`, `^\\S+@\\S+$`, `^(v\\d+\\.)?\\d+$`) pass.
"""

from __future__ import annotations

from typing import Any

from local_tools.core.errors import InvalidInput

try:  # Python 3.11+
    from re import _compiler  # type: ignore[attr-defined]
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile as _compiler  # type: ignore[no-redef]
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["check_patterns"]

_MAX_BOUNDED = 10
_MAX_UNBOUNDED = 3
_REPEATS = {_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT}
_POSSESSIVE = getattr(_sre_constants, "POSSESSIVE_REPEAT", None)


def check_patterns(schema: Any) -> None:
    """INVALID_INPUT for the first pattern in `schema` that could take exponential time."""
    for where, pattern in _patterns(schema, "$"):
        why = _risk(pattern)
        if why is not None:
            raise InvalidInput(
                f"The schema's pattern at {where} ({pattern!r}) {why}, which can take "
                "exponential time on some strings; simplify it (e.g. no repeat of a group "
                "that itself repeats or has alternatives)."
            )


def _patterns(node: Any, where: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}"
            if key == "pattern" and isinstance(value, str):
                found.append((here, value))
            elif key == "patternProperties" and isinstance(value, dict):
                found += [(f"{here}[{k!r}]", k) for k in value if isinstance(k, str)]
            found += _patterns(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += _patterns(item, f"{where}[{i}]")
    return found


def _risk(pattern: str) -> str | None:
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception:  # jsonschema reports an invalid regex itself
        return None
    unbounded = [0]
    why = _walk(parsed, unbounded, parsed.state)
    if why is None and unbounded[0] > _MAX_UNBOUNDED:
        why = f"has {unbounded[0]} unbounded repeats"
    return why


def _walk(items: Any, unbounded: list[int], state: Any) -> str | None:
    for op, arg in items:
        if op in _REPEATS or op == _POSSESSIVE:
            _low, high, body = arg
            if high == _sre_constants.MAXREPEAT or high > _MAX_BOUNDED:
                unbounded[0] += 1
            # Bounded too: `((a|aa){0,10}){0,10}` multiplies its bounds into the paths tried.
            if high > 1 and _varies(body) and not _anchored(body, state):
                return "repeats a group that itself repeats or has alternatives"
            why = _walk(body, unbounded, state)
        elif op == _sre_constants.SUBPATTERN:
            why = _walk(arg[-1], unbounded, state)
        elif op == _sre_constants.BRANCH:
            why = next((w for b in arg[1] if (w := _walk(b, unbounded, state))), None)
        elif op in (_sre_constants.ASSERT, _sre_constants.ASSERT_NOT):
            why = _walk(arg[1], unbounded, state)
        else:
            why = None
        if why is not None:
            return why
    return None


def _anchored(body: Any, state: Any) -> bool:
    """A repeated body that starts or ends with a fixed character nothing else in it can
    match (`(-[a-z]+)*`, `([a-z]+\\.)+`): each round is delimited by it, one way only."""
    items = list(_top(body))
    if not items:
        return False
    for edge, rest in ((items[0], items[1:]), (items[-1], items[:-1])):
        if edge[0] != _sre_constants.LITERAL:
            continue
        char = chr(edge[1])
        others = [i for item in rest for i in _flat([item])]
        if all(_cannot_match(item, char, state) for item in others):
            return True
    return False


def _top(items: Any) -> Any:
    """`items` with groups opened (not repeats): the body's own sequence. A group with
    its own flags (`(?i:a)`) stays whole: its characters match more than they say."""
    for op, arg in items:
        if op == _sre_constants.SUBPATTERN and not (arg[1] or arg[2]):
            yield from _top(arg[-1])
        else:
            yield (op, arg)


def _cannot_match(item: Any, char: str, state: Any) -> bool:
    if item[0] in (_sre_constants.ANY, _sre_constants.BRANCH, _sre_constants.SUBPATTERN):
        return False
    single = _sre_parse.SubPattern(state, [item])
    return _compiler.compile(single, 0).fullmatch(char) is None


def _flat(items: Any) -> Any:
    """The single-character items of `items`, through groups and repeats, in order."""
    for op, arg in items:
        if op in _REPEATS or op == _POSSESSIVE:
            yield from _flat(arg[2])
        elif op == _sre_constants.SUBPATTERN and not (arg[1] or arg[2]):
            yield from _flat(arg[-1])
        elif op in (_sre_constants.BRANCH, _sre_constants.SUBPATTERN):
            yield (op, arg)  # alternatives, or a group with flags: may match anything
        elif op in (_sre_constants.ASSERT, _sre_constants.ASSERT_NOT, _sre_constants.AT):
            continue
        else:
            yield (op, arg)


def _varies(items: Any) -> bool:
    """Whether `items` can match in more than one way by itself: a repeat or alternation."""
    for op, arg in items:
        if op in _REPEATS or op == _POSSESSIVE:
            low, high, body = arg
            if high != low or _varies(body):
                return True
        elif op == _sre_constants.BRANCH:
            return True
        elif op == _sre_constants.SUBPATTERN:
            if _varies(arg[-1]):
                return True
        elif op in (_sre_constants.ASSERT, _sre_constants.ASSERT_NOT) and _varies(arg[1]):
            return True
    return False
