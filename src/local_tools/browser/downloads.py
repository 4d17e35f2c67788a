"""Where a page's downloads land: a folder of the workspace, written through the jail.

Chromium writes a download to a private staging directory (mode 0700, outside the
workspace) under a random name; ``Downloads.watch`` cancels it once it passes the size
cap, then writes the finished bytes into the folder with ``Jail.write_atomic`` (so the
workspace rules apply, a symlinked folder cannot lead out, and a crash never leaves half
a file), under a name made safe by ``safe_filename`` and never over an existing file:
``report.pdf``, then ``report (1).pdf``, ...
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_tools.core.errors import AlreadyExists, PermissionDenied, ToolError
from local_tools.security.jail import Jail

__all__ = ["DownloadRecord", "Downloads", "safe_filename"]

MAX_NAME_BYTES = 200  # well under every file system's 255, room for " (99)"
_POLL = 0.05  # seconds between size checks of a download in progress
TOTAL_FACTOR = 10  # one browser saves at most 10 × max_download_mb in all
MAX_FILES = 200  # and at most this many files
_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)")
# Characters no file name keeps: path separators, Windows' reserved ones, controls.
_UNSAFE = re.compile(r'[/\\:*?"<>|\x00-\x1f\x7f]')


def safe_filename(suggested: str, fallback: str = "download") -> str:
    """A server's file name as one harmless name in a folder: no directory part, no
    `..`, no control, format or bidi-override characters (a name that displays as
    `exe.pdf` but is `fdp.exe`), no leading dot (hidden) or dash (an option), no
    Windows device name, at most MAX_NAME_BYTES of UTF-8 with the extension kept."""
    name = unicodedata.normalize("NFC", suggested)
    name = name.replace("\\", "/").rsplit("/", 1)[-1]  # the last part of any path
    # Cc controls, Cf format (bidi overrides, zero-width), Co private use, Cs, Cn, Zl/Zp.
    name = "".join(
        "_" if _UNSAFE.match(ch) else ch
        for ch in name
        if unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")
    )
    name = " ".join(name.split())  # any run of spaces (NBSP, ideographic) is one space
    name = name.strip(" .").lstrip("-")
    if not name.strip("._ "):
        name = fallback
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    if _RESERVED.fullmatch(stem.split(".")[0].rstrip(" ")):
        stem = "_" + stem
    ext = _cut(ext, 20)
    stem = _cut(stem, MAX_NAME_BYTES - len(ext.encode()) - 1)
    return f"{stem}.{ext}" if ext else stem


def _cut(text: str, max_bytes: int) -> str:
    data = text.encode()[:max_bytes]
    return data.decode(errors="ignore").rstrip(" .")


def _numbered(name: str, n: int) -> str:
    stem, dot, ext = name.rpartition(".")
    return f"{stem} ({n}).{ext}" if dot and stem else f"{name} ({n})"


@dataclass
class DownloadRecord:
    url: str
    suggested: str  # the name the server gave
    status: str  # "downloading", "saved" or "failed"
    path: str = ""  # workspace-relative, once saved
    size: int = 0  # bytes, once saved
    reason: str = ""  # why it failed

    def describe(self) -> str:
        if self.status == "saved":
            return f"Downloaded {self.url} to {self.path} ({self.size} bytes)."
        if self.status == "failed":
            return f"The download of {self.url} ({self.suggested!r}) failed: {self.reason}"
        return f"The download of {self.url} is still in progress (see browser_get_state)."


class Downloads:
    """Saves Playwright downloads into `folder` of the jail's workspace."""

    def __init__(self, jail: Jail, folder: str, max_bytes: int) -> None:
        self.jail = jail
        self.folder = folder
        self.max_bytes = max_bytes
        # A page can download again and again, between calls too: all it may save
        # in one browser's life is bounded as well.
        self.max_total = max_bytes * TOTAL_FACTOR
        self.saved_bytes = 0
        self.saved_files = 0
        self.staging = Path(tempfile.mkdtemp(prefix="local-tools-downloads-"))

    def close(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    async def watch(
        self,
        download: Any,
        record: DownloadRecord,
        done: Callable[[DownloadRecord], None],
        permit: Callable[[str], str | None] = lambda path: None,
    ) -> None:
        """Follow one download to its end: cancelled past the cap, else saved where
        `permit` (the write:file rules, without asking) allows."""
        try:
            reason = await self._finish(download, record, permit)
        except Exception as exc:  # a broken download must be reported, never raised
            reason = f"{type(exc).__name__}: {exc}"
        finally:
            with contextlib.suppress(Exception):
                await download.delete()  # the staging copy
        record.status, record.reason = ("failed", reason) if reason else ("saved", "")
        done(record)

    async def _finish(
        self, download: Any, record: DownloadRecord, permit: Callable[[str], str | None]
    ) -> str:
        """Wait for the download and save it; '' when saved, else why not."""
        finished = asyncio.ensure_future(download.path())
        cap = self.max_bytes
        if self.saved_bytes >= self.max_total or self.saved_files >= MAX_FILES:
            await download.cancel()
            with contextlib.suppress(Exception):
                await finished
            return (
                f"this browser already saved {self.saved_files} downloads "
                f"({self.saved_bytes // 2**20} MB), its limit; nothing was saved."
            )
        while not finished.done():
            await asyncio.wait([finished], timeout=_POLL)
            if not finished.done() and self._staged_bytes() > cap:
                await download.cancel()
                with contextlib.suppress(Exception):
                    await finished
                return (
                    f"larger than the {cap // 2**20} MB cap ([browser] max_download_mb); "
                    "it was cancelled and nothing was saved."
                )
        failure = await download.failure()
        if failure:
            return f"{failure}; nothing was saved."
        staged = finished.result()
        size = os.path.getsize(staged)
        if size > cap:  # finished between two polls
            return f"larger than the {cap // 2**20} MB cap ([browser] max_download_mb)."
        data = await asyncio.to_thread(Path(staged).read_bytes)
        try:
            record.path = await asyncio.to_thread(self._save, record.suggested, data, permit)
        except ToolError as exc:
            return f"it could not be saved in {self.folder!r} ([browser] downloads): {exc.message}"
        record.size = size
        self.saved_bytes += size
        self.saved_files += 1
        return ""

    def _staged_bytes(self) -> int:
        # The staging directory holds only downloads in progress (finished ones are
        # deleted once saved), so the cap counts those in progress together.
        total = 0
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.staging):
                with contextlib.suppress(OSError):
                    total += entry.stat(follow_symlinks=False).st_size
        return total

    def _save(self, suggested: str, data: bytes, permit: Callable[[str], str | None]) -> str:
        name = safe_filename(suggested)
        for n in range(1000):
            candidate = name if n == 0 else _numbered(name, n)
            path = f"{self.folder.rstrip('/')}/{candidate}"
            refused = permit(self.jail.display(self.jail.resolve(path, write=True)))
            if refused:
                raise PermissionDenied(refused)
            try:
                self.jail.write_atomic(path, data, exclusive=True)
            except AlreadyExists:
                continue
            return self.jail.display(self.jail.resolve(path))
        raise AlreadyExists(f"{self.folder}/{name} and 999 numbered names like it exist.")
