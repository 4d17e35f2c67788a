"""The one file a compact call saves what it removed to, in the spill folder (which
read_file and grep can read): one section per removed piece, each found by its lines."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from local_tools.core.output import SPILL_SUFFIX, reserve_spill

__all__ = ["LINE_CHARS", "Saved", "SpillFile"]

# read_file shows at most this many characters of a line: longer ones are wrapped so
# every character can be read back.
LINE_CHARS = 2000


@dataclass(frozen=True)
class Saved:
    path: Path
    offset: int  # the section's first line of text (1-based, as read_file counts)
    lines: int

    def read_hint(self) -> str:
        return f"read_file path={self.path} offset={self.offset} limit={self.lines}"


class SpillFile:
    """Created on the first piece saved; None from `save` when the folder is full or
    cannot be written (the stub then says to re-run the call instead)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path: Path | None = None
        self._handle: BinaryIO | None = None
        self._lines = 0  # lines written so far
        self._broken = False

    def save(self, header: str, text: str) -> Saved | None:
        if self._broken:
            return None
        body, wrapped = _wrapped(text if text.endswith("\n") else text + "\n")
        if wrapped:
            header += f" (lines over {LINE_CHARS} characters wrapped)"
        # Only "\n" ends a line for read_file, so counting it gives read_file's offsets.
        data = f"=== {header} ===\n{body}\n".encode("utf-8", "backslashreplace")
        try:
            handle = self._open()
            if not reserve_spill(self.folder, len(data)):
                raise OSError("the spill folder is full")
            handle.write(data)
            handle.flush()
        except OSError:
            self._broken = True
            return None
        assert self.path is not None
        saved = Saved(self.path, self._lines + 2, body.count("\n"))
        self._lines += 1 + body.count("\n") + 1
        return saved

    def _open(self) -> BinaryIO:
        if self._handle is None:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = self.folder / f"{stamp}-compact-{secrets.token_hex(4)}{SPILL_SUFFIX}"
            # O_EXCL: never write through a file or symlink someone planted there.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            self._handle = os.fdopen(os.open(path, flags, 0o600), "wb")
            self.path = path
        return self._handle

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _wrapped(text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    if all(len(line) <= LINE_CHARS for line in lines):
        return text, False
    out = []
    for line in lines:
        out += [line[i : i + LINE_CHARS] for i in range(0, len(line), LINE_CHARS)] or [""]
    return "\n".join(out), True
