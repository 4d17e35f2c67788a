"""What hover may show: its text made plain, and the library folders it may quote
though they lie outside the roots."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

from local_tools.lsp.client import LanguageServer

__all__ = ["hover_text", "library_roots"]


def library_roots(server: LanguageServer) -> list[Path]:
    """Folders whose files hover may quote though they are outside the roots: this
    Python's (stdlib, site-packages: the server's bundled stubs live there) and the
    TypeScript the server runs (its lib.d.ts)."""
    roots = {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values()}
    tsserver = server.spec.init_options.get("tsserver")
    if isinstance(tsserver, dict) and isinstance(tsserver.get("path"), str):
        roots.add(str(Path(tsserver["path"]).parent.parent))
    return [Path(os.path.realpath(r)) for r in roots if r]


def hover_text(contents: Any) -> str:
    """MarkupContent, MarkedString or a list of them → plain text (code fences dropped)."""
    parts = contents if isinstance(contents, list) else [contents]
    texts: list[str] = []
    for part in parts:
        value = part.get("value") if isinstance(part, dict) else part
        if isinstance(value, str) and value.strip():
            lines = [ln for ln in value.strip().split("\n") if not ln.startswith("```")]
            texts.append("\n".join(lines).strip())
    return "\n\n".join(texts)
