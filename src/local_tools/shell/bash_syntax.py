"""The tree-sitter-bash parser, one per thread, and reading its syntax trees.

Apart from `command_parse` so the walk over statements is not mixed with how the
parser is loaded and how its trees are read.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["bash_parser", "descendants", "list_items", "syntax_error"]

_local = threading.local()  # Parser objects are not thread-safe: one per thread
_language: list[Any] = []


def bash_parser() -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        if not _language:
            _language.append(tree_sitter.Language(tree_sitter_bash.language()))
        parser = _local.parser = tree_sitter.Parser(_language[0])
    return parser


def syntax_error(root: Node, data: bytes) -> str:
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


def descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(node.children)
    while stack:
        n = stack.pop()
        found.append(n)
        stack.extend(n.children)
    return found


def list_items(node: Node) -> list[Node]:
    """The statements of an `a && b || c` chain; tree-sitter nests it to the left."""
    items: list[Node] = []
    while node.type == "list" and node.named_children:
        kids = node.named_children
        items.extend(reversed(kids[1:]))
        node = kids[0]
    items.append(node)
    items.reverse()
    return items
