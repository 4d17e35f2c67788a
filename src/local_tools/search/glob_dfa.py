"""Linear-time matching of glob tokens: a lazily built DFA over bytes.

`glob_match` turns globs into Python regexes, which backtrack: `**/*a*a*a...*b` against a
long name takes exponential time inside the regex engine, holding the interpreter lock,
so nothing else in the process runs and no timeout can fire. A glob whose regex could
backtrack that way is matched here instead, by simulating its automaton: every byte of a
path is looked at once, whatever the pattern.

The automaton is built from the same tokens the regex is made of and accepts exactly
the same byte strings (`.` of the regex excludes '\\n'; a character class is the set of
single bytes its regex source accepts). DFA states are made on first use and cached; past
`_MAX_STATES` the cache is dropped, so memory stays bounded and the cost per byte stays
bounded by the number of automaton nodes.

Several globs can share one automaton, each with a rank: `match` answers the best rank
among those that match (an ignore file's last matching line wins).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["ANY", "EVERYTHING", "RMIDDLE", "RPREFIX", "RSUFFIX", "STAR", "GlobAutomaton"]

# Tokens, as globset names them (`glob_match` parses globs into these), and EVERYTHING,
# what a glob of only `**` is (the regex `.*`).
ANY, STAR, RPREFIX, RSUFFIX, RMIDDLE = "any", "star", "rprefix", "rsuffix", "rmiddle"
EVERYTHING = "everything"

_MAX_STATES = 4096
_SLASH = ord("/")
_ALL = frozenset(range(256)) - {ord("\n")}  # the regex's `.`
_NOT_SLASH = frozenset(range(256)) - {_SLASH}


@dataclass(eq=False)
class _Node:
    accepts: frozenset[int] = frozenset()  # bytes consumed here (empty: an epsilon node)
    next: list[_Node] = field(default_factory=list)
    rank: int | None = None  # a final node: this glob matched


@dataclass(eq=False, slots=True)
class _State:
    nodes: tuple[_Node, ...]
    rank: int | None
    moves: dict[int, _State] = field(default_factory=dict)


class GlobAutomaton:
    """Globs (as `glob_match` tokens) matched in one pass over a path's bytes."""

    def __init__(
        self,
        globs: Sequence[tuple[Sequence[object], int]],
        atom_regex: Callable[[Sequence[object]], str],
    ) -> None:
        """`globs`: (tokens, rank) pairs; `atom_regex(tokens)` gives tokens' regex source."""
        self._atom_regex = atom_regex
        starts: list[_Node] = []
        for tokens, rank in globs:
            starts.append(self._sequence(tokens, _Node(rank=rank)))
        self._start_nodes = starts
        self._cache: dict[frozenset[int], _State] = {}
        self._start = self._state(starts)

    # -- building

    def _sequence(self, tokens: Sequence[object], after: _Node) -> _Node:
        node = after
        for token in reversed(tokens):
            node = self._token(token, node)
        return node

    def _token(self, token: object, after: _Node) -> _Node:
        if token == ANY:
            return _Node(_NOT_SLASH, [after])
        if token == STAR:
            return _loop(_NOT_SLASH, after)
        if token == EVERYTHING:
            return _loop(_ALL, after)
        if token == RPREFIX:  # (?:/?|.*/)
            slash = _Node(frozenset({_SLASH}), [after])
            return _Node(next=[after, slash, _loop(_ALL, slash)])
        if token == RSUFFIX:  # /.*
            return _Node(frozenset({_SLASH}), [_loop(_ALL, after)])
        if token == RMIDDLE:  # (?:/|/.*/)
            closing = _Node(frozenset({_SLASH}), [after])
            return _Node(frozenset({_SLASH}), [after, _loop(_ALL, closing)])
        assert isinstance(token, tuple)
        if token[0] == "lit":
            node = after
            for byte in reversed(token[1].encode("utf-8", "surrogateescape")):
                node = _Node(frozenset({byte}), [node])
            return node
        if token[0] == "class":
            source = self._atom_regex([token])
            single = re.compile(source.encode("ascii"))
            members = frozenset(b for b in range(256) if single.fullmatch(bytes([b])))
            return _Node(members, [after])
        if token[0] == "alt":
            # As the regex does: branches whose source is empty are left out, and an
            # alternation of nothing but empty branches matches the empty string.
            branches = [b for b in token[1] if self._atom_regex(b)]
            if not branches:
                return after
            return _Node(next=[self._sequence(b, after) for b in branches])
        raise ValueError(f"unknown glob token {token!r}")

    # -- matching

    def match(self, data: bytes) -> int | None:
        """The best (lowest) rank of the globs that match all of `data`, else None."""
        state = self._start
        for byte in data:
            nxt = state.moves.get(byte)
            if nxt is None:
                nxt = self._move(state, byte)
            state = nxt
            if not state.nodes and state.rank is None:
                return None  # no way on
        return state.rank

    def _move(self, state: _State, byte: int) -> _State:
        targets = [n for node in state.nodes if byte in node.accepts for n in node.next]
        if len(self._cache) >= _MAX_STATES:
            # Bounded memory: start over; states already handed out stay valid.
            self._cache.clear()
        nxt = self._state(targets)
        state.moves[byte] = nxt
        return nxt

    def _state(self, nodes: Sequence[_Node]) -> _State:
        closure: dict[int, _Node] = {}
        stack = list(nodes)
        rank: int | None = None
        while stack:
            node = stack.pop()
            if id(node) in closure:
                continue
            closure[id(node)] = node
            if node.rank is not None and (rank is None or node.rank < rank):
                rank = node.rank
            if not node.accepts:
                stack.extend(node.next)
        consuming = tuple(n for n in closure.values() if n.accepts)
        key = frozenset(id(n) for n in consuming) | ({-1 - rank} if rank is not None else set())
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = _State(consuming, rank)
        return found


def _loop(accepts: frozenset[int], after: _Node) -> _Node:
    """`X*` before `after`: an epsilon node that consumes X and comes back, or leaves."""
    entry = _Node()
    body = _Node(accepts, [entry])
    entry.next = [body, after]
    return entry
