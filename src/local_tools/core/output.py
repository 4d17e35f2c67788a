"""Output bounding (preview + spill to file) and the default text rendering for models.

A tool's text can be arbitrarily long; a model's context is not. ``bound_text`` keeps
a preview that fits both a line and a byte limit, writes the full text to a spill
file, and tells the model how to page through it with ``read_file`` or ``grep``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "SPILL_DIR_LIMIT",
    "Bounded",
    "bound_text",
    "cleanup_spills",
    "render_compact",
    "reserve_spill",
    "spill_folder_bytes",
]

SPILL_SUFFIX = ".txt"
INLINE_MAX_CHARS = 200  # containers whose JSON fits on one line this long stay on one line
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Bounded:
    text: str
    truncated: bool
    total_lines: int
    total_bytes: int
    spill_path: Path | None


# --------------------------------------------------------------------------- bounding


def _utf8(s: str) -> bytes:
    # surrogatepass: subprocess output decoded with surrogateescape must not raise here.
    return s.encode("utf-8", "surrogatepass")


def _count_lines(text: str) -> int:
    # Only "\n" ends a line, so "\r\n" counts once and a lone "\r" (progress bars)
    # does not split; this matches read_file's line numbers.
    if not text:
        return 0
    return text.count("\n") + (not text.endswith("\n"))


def _head_cut(line: str, budget: int) -> str:
    """The longest prefix of ``line`` whose UTF-8 form fits ``budget`` bytes."""
    raw = _utf8(line[:budget])  # a char is at least one byte: enough chars to fill it
    if len(raw) <= budget:
        return line[:budget]
    cut = budget
    while cut > 0 and (raw[cut] & 0xC0) == 0x80:  # never split a multi-byte char
        cut -= 1
    return raw[:cut].decode("utf-8", "surrogatepass")


def _tail_cut(line: str, budget: int) -> str:
    """The longest suffix of ``line`` whose UTF-8 form fits ``budget`` bytes."""
    raw = _utf8(line[-budget:])
    if len(raw) <= budget:
        return line[-budget:]
    start = len(raw) - budget
    while start < len(raw) and (raw[start] & 0xC0) == 0x80:
        start += 1
    return raw[start:].decode("utf-8", "surrogatepass")


def _head(text: str, max_lines: int, max_bytes: int) -> tuple[str, int, bool]:
    """(preview, whole lines kept, last line cut short)."""
    pos = kept = used = 0
    n = len(text)
    while kept < max_lines and pos < n:
        end = text.find("\n", pos)
        end = n if end < 0 else end + 1
        line = text[pos:end]
        size = len(line) if line.isascii() else len(_utf8(line))
        if used + size > max_bytes:
            if kept == 0:  # a single line longer than the limit: show its start
                return _head_cut(line, max_bytes - used), 0, True
            break
        used += size
        pos = end
        kept += 1
    return text[:pos], kept, False


def _tail(text: str, max_lines: int, max_bytes: int) -> tuple[str, int, bool]:
    """(preview, whole lines kept, first line cut short) from the end of ``text``."""
    pos = len(text)
    kept = used = 0
    while kept < max_lines and pos > 0:
        # The line ending at pos (its own "\n" included) starts after the previous "\n".
        start = text.rfind("\n", 0, pos - 1) + 1
        line = text[start:pos]
        size = len(line) if line.isascii() else len(_utf8(line))
        if used + size > max_bytes:
            if kept == 0:
                return _tail_cut(line, max_bytes - used), 0, True
            break
        used += size
        pos = start
        kept += 1
    return text[pos:], kept, False


# What the spill folder may hold before nothing more is saved there (shell/capture.py
# spills command output to the same folder, under the same limit).
SPILL_DIR_LIMIT = 512 * 1024 * 1024


def spill_folder_bytes(folder: Path) -> int:
    """What the files directly in `folder` take (0 when it cannot be read)."""
    total = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    except OSError:
        return 0
    return total


_used: dict[str, int] = {}  # spill folder -> bytes in it, as this process counts them
_used_lock = threading.Lock()


def reserve_spill(folder: Path, size: int) -> bool:
    """Count `size` more bytes into `folder` if it stays within SPILL_DIR_LIMIT. Every
    writer of this process (tool outputs, each command's streams) reserves before it
    writes, so eight `seq inf &` together cannot pass the limit; the folder is measured
    again before a refusal (old files may have been removed)."""
    key = str(folder)
    with _used_lock:
        used = _used.get(key)
        if used is None or used + size > SPILL_DIR_LIMIT:
            used = spill_folder_bytes(folder)
        if used + size > SPILL_DIR_LIMIT:
            _used[key] = used
            return False
        _used[key] = used + size
        return True


def _spill(text: str, spill_dir: Path, name: str) -> Path:
    if not reserve_spill(spill_dir, len(text)):
        raise OSError("the spill folder is full")  # bounded disk: the preview stays
    spill_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    safe = _NAME_UNSAFE.sub("_", name).strip("._")[:60] or "output"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = spill_dir / f"{stamp}-{safe}-{secrets.token_hex(4)}{SPILL_SUFFIX}"
    try:
        # surrogateescape gives back the original bytes of undecodable subprocess output
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "backslashreplace")
    # O_EXCL: never write through a file or symlink someone planted under that name.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def bound_text(
    text: str,
    *,
    max_lines: int,
    max_bytes: int,
    spill_dir: Path | None,
    name: str = "output",
    direction: Literal["head", "tail"] = "head",
) -> Bounded:
    """Keep ``text`` within ``max_lines`` lines and ``max_bytes`` UTF-8 bytes.

    Within both limits the text comes back unchanged. Otherwise the preview is the
    first (``"head"``) or last (``"tail"``, for command output where the end matters)
    whole lines that fit both limits, with their original line endings; a single line
    longer than ``max_bytes`` is cut, never inside a character. The full text is
    written to ``spill_dir/<timestamp>-<name>-<random>.txt`` (mode 0600) and a hint
    for the model is added — after the preview for ``head``, before it for ``tail``
    (where the omission is). The preview fits the limits; the hint comes on top.

    Lines are counted on ``"\\n"`` only, so CRLF counts once; ``total_bytes`` is the
    UTF-8 size of the original text. Line numbers in the hint are 1-based, as
    ``read_file``'s ``offset`` is.
    """
    if max_lines < 1 or max_bytes < 1:
        raise ValueError("max_lines and max_bytes must be at least 1")
    n = len(text)
    # Fast path: a string no longer (in chars) than max_bytes is usually within limits.
    if n <= max_bytes:
        size = n if text.isascii() else len(_utf8(text))
        if size <= max_bytes:
            lines = _count_lines(text)
            if lines <= max_lines:
                return Bounded(text, False, lines, size, None)
    total_bytes = len(_utf8(text))
    total_lines = _count_lines(text)

    spill_path: Path | None = None
    if spill_dir is not None:
        try:
            spill_path = _spill(text, spill_dir, name)
        except OSError:
            spill_path = None

    if direction == "tail":
        preview, kept, cut = _tail(text, max_lines, max_bytes)
        omitted = total_lines - kept  # a line cut short counts as not shown
        detail = f"; line {omitted} is cut short" if cut else ""
        if kept:
            detail += f"; showing lines {omitted + 1}-{total_lines}"
        what = f"... {omitted} earlier lines truncated ({total_bytes} bytes total{detail})."
        offset = 1
    else:
        preview, kept, cut = _head(text, max_lines, max_bytes)
        omitted = total_lines - kept
        detail = f"; line {kept + 1} is cut short" if cut else ""
        what = f"... {omitted} more lines truncated ({total_bytes} bytes total{detail})."
        offset = kept + 1
    if spill_path is not None:
        hint = (
            f"{what} Full output saved to {spill_path}. Read it with read_file "
            f"path={spill_path} offset={offset} limit={max_lines}, or search it with grep."
        )
    else:
        hint = (
            f"{what} The full output was not saved; narrow the request "
            "(a more specific path, pattern or command) to see the rest."
        )

    if not preview:
        body = hint
    elif direction == "tail":
        body = f"{hint}\n\n{preview}"
    else:
        sep = "\n" if preview.endswith("\n") else "\n\n"  # one blank line before the hint
        body = f"{preview}{sep}{hint}"
    return Bounded(body, True, total_lines, total_bytes, spill_path)


def cleanup_spills(spill_dir: Path, max_age_days: float = 7) -> int:
    """Delete spill files (``*.txt``) in ``spill_dir`` older than ``max_age_days``.

    Returns how many were removed. A missing directory, files vanishing meanwhile
    (another process cleaning up) and undeletable files are not errors. Only regular
    files directly in the directory are considered; symlinks and subdirs are left.
    """
    cutoff = time.time() - max_age_days * 86400
    removed = 0
    try:
        entries = os.scandir(spill_dir)
    except OSError:
        return 0
    with entries:
        for entry in entries:
            if not entry.name.endswith(SPILL_SUFFIX):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                    continue
                os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed


# --------------------------------------------------------------------------- rendering


def _plain(value: Any) -> Any:
    """Turn models and dataclasses into JSON-ready values; other objects pass through."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


# Built once: json.dumps with options constructs a new encoder on every call.
_json = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str).encode


def _is_block(value: Any) -> bool:
    """Fields worth their own section: multi-line text, and lists too long for a line."""
    if isinstance(value, str):
        return "\n" in value
    if isinstance(value, (list, tuple)) and value:
        return len(_json(value)) > INLINE_MAX_CHARS
    return False


def _strip_eol(text: str) -> str:
    # The section layout supplies the line break; keep any blank lines before it.
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


def _render_list(items: Any) -> str:
    line = _json(items)
    if len(line) <= INLINE_MAX_CHARS:
        return line
    return "[\n" + ",\n".join(f"  {_json(item)}" for item in items) + "\n]"


def render_compact(value: Any) -> str:
    """The default text a model reads for a tool's output.

    - A string is returned as is; ``None``, booleans and numbers as JSON (``null``).
    - A list is one line of JSON when short (≤ 200 chars), otherwise valid JSON
      with one item per line (``[\\n  {...},\\n  {...}\\n]``) — easy to scan, cheap in
      tokens, no deep indentation.
    - A dict puts its short fields on one JSON line, in order (``{"exit_code": 0,
      "truncated": false}``), then each multi-line string or long list under its
      own ``--- key ---`` header: text raw (not JSON-escaped, so code and command
      output read as they are and can be quoted back exactly in an edit; its final
      line break is left to the layout), lists one JSON item per line. A dict
      with only short fields is plain one-line JSON, or one field per line when
      that line would be long.

    JSON uses ``ensure_ascii=False`` and ``", "``/``": "`` separators; objects it
    cannot encode become ``str(obj)``; pydantic models and dataclasses are dumped.
    Never raises: what JSON cannot take at all (cycles, tuple keys) falls back to
    ``repr``.
    """
    try:
        return _render(_plain(value))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return _render_list(value)
    if not isinstance(value, dict):
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return _json(value)

    short = {k: v for k, v in value.items() if not _is_block(v)}
    parts = []
    if short or not value:
        line = _json(short)
        if len(line) > INLINE_MAX_CHARS and len(short) > 1:
            items = ",\n".join(f"  {_json(str(k))}: {_json(v)}" for k, v in short.items())
            line = "{\n" + items + "\n}"
        parts.append(line)
    for key, v in value.items():
        if key in short:
            continue
        if isinstance(v, str):
            parts.append(f"--- {key} ---\n{_strip_eol(v)}")
        else:
            body = "\n".join(_json(item) for item in v)
            parts.append(f"--- {key} ({len(v)} items) ---\n{body}")
    return "\n".join(parts)
