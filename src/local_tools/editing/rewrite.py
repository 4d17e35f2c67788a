"""Read → check freshness → transform → write, for the tools that change text in place."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from local_tools.core.context import ToolContext
from local_tools.editing.freshness import check_fresh, file_lock, note_read
from local_tools.editing.textfile import TextFile, encode_text, read_text_file

__all__ = ["Rewrite", "rewrite_text_file"]

T = TypeVar("T")


@dataclass(frozen=True)
class Rewrite(Generic[T]):
    shown: str  # workspace-relative path for messages and output
    before: str
    after: str
    info: T  # whatever the transform reported (strategy, counts ...)
    created: bool


def rewrite_text_file(
    ctx: ToolContext,
    path: str,
    transform: Callable[[str], tuple[str, T]],
    *,
    create_missing: bool = False,
) -> Rewrite[T]:
    """Apply `transform` to the file's text and write the result atomically.

    The file keeps its encoding, BOM and (through the transform) line endings. The
    whole read-modify-write holds a per-file lock, so concurrent edits of one file
    in this process are serialized instead of losing each other's changes.
    """
    real = ctx.jail.resolve(path, write=True)
    shown = ctx.jail.display(real)
    with file_lock(real):
        tf: TextFile = read_text_file(ctx.jail, path, missing_ok=create_missing)
        if tf.exists:
            check_fresh(ctx, real, tf.version, shown)
        after, info = transform(tf.text)
        ctx.check_cancelled()
        # Write where the path leads: editing through a symlink changes its target
        # (inside the jail) and keeps the link, as editors do.
        ctx.jail.write_atomic(str(real), encode_text(tf, after), exclusive=not tf.exists)
        note_read(ctx, real, os.stat(real))
    ctx.record_change(real, tf.text if tf.exists else None, after)
    return Rewrite(shown, tf.text, after, info, created=not tf.exists)
