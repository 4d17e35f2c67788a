"""Reading git config files the way git reads them, without running git.

`parse_config` is a port of the parser in git's config.c: it gives the same (key, value)
pairs as `git config --list` for a file, and raises `ConfigError` (carrying the pairs
before the fault) where git would report a bad config line. `read_config` reads one file
and, recursively, every include.path and includeIf.*.path it names (conditions are not
evaluated, so this over-approximates), appending the entries to a `ConfigFiles` and
recording as problems whatever it could not read, parse or bound: unreadable files,
FIFOs and devices (never opened blocking), files over 1 MiB, includes nested deeper than
git allows. `Config` answers "the last value of this key" over entries in file order,
with keys canonicalised as git's parse_config_key splits them (`split_key`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeAlias

__all__ = [
    "Config",
    "ConfigError",
    "ConfigFiles",
    "Entries",
    "c_string",
    "canonical",
    "is_file",
    "join_key",
    "parse_config",
    "read_bytes",
    "read_config",
    "read_text",
    "split_key",
]

Entries: TypeAlias = list[tuple[str, str | None]]  # (canonical key, value; None: bare key)

MAX_CONFIG_BYTES = 1 << 20
MAX_INCLUDE_DEPTH = 10  # git's own limit


@dataclass
class Config:
    """Config entries in file order, as (canonical key, value or None for a bare key)."""

    entries: Entries = field(default_factory=list)

    def distinct_keys(self) -> Iterator[str]:
        return iter(dict.fromkeys(k for k, _ in self.entries))

    def last(self, key: str) -> str | None:
        wanted = canonical(key)
        for k, v in reversed(self.entries):
            if k == wanted:
                return v
        return None

    def value(self, key: str, default: str) -> str:
        """The last value of `key`, "true" for a bare key (git's boolean), else `default`."""
        wanted = canonical(key)
        for k, v in reversed(self.entries):
            if k == wanted:
                return "true" if v is None else v
        return default


@dataclass
class ConfigFiles:
    """What reading config files found: their entries, and what could not be read."""

    config: Config = field(default_factory=Config)
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # every file read or named, as joined


def read_config(found: ConfigFiles, path: str, depth: int = 0) -> None:
    """Append the entries of the config file at `path` and of the files it includes."""
    found.files.append(path)  # one not there yet counts: what creates it steers git
    text = read_text(found.problems, path)
    if text is None:
        return
    try:
        entries = parse_config(text)
    except ConfigError as exc:
        found.problems.append(f"{path}: {exc}")
        entries = exc.entries
    for key, value in entries:
        found.config.entries.append((key, value))
        if not _is_include(key) or not value or value.startswith("%(prefix)/"):
            continue
        if depth >= MAX_INCLUDE_DEPTH:
            found.problems.append(f"{path}: includes nested deeper than {MAX_INCLUDE_DEPTH}")
            continue
        target = os.path.join(os.path.dirname(path), os.path.expanduser(c_string(value)))
        read_config(found, target, depth + 1)


def c_string(text: str) -> str:
    """`text` up to a NUL, where git's C strings end."""
    return text.split("\0", 1)[0]


def _is_include(key: str) -> bool:
    section, sub, name = split_key(key)
    return name == "path" and (
        (section == "include" and sub is None) or (section == "includeif" and sub is not None)
    )


# -- reading files ----------------------------------------------------------------------


def is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_bytes(problems: list[str], path: str, limit: int) -> bytes | None:
    """A regular file's bytes; None when missing. Never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if not os.path.isdir(path):
            problems.append(f"{path}: {exc.strerror}")
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return None
        if not stat.S_ISREG(st.st_mode):
            problems.append(f"{path}: not a regular file")
            return None
        if st.st_size > limit:
            problems.append(f"{path}: larger than {limit} bytes")
            return None
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while read
            problems.append(f"{path}: larger than {limit} bytes")
            return None
        return b"".join(chunks)
    except OSError as exc:
        problems.append(f"{path}: {exc.strerror}")
        return None
    finally:
        os.close(fd)


def read_text(problems: list[str], path: str) -> str | None:
    """A small text file git reads (config, gitdir:, commondir), undecodable bytes kept."""
    data = read_bytes(problems, path, MAX_CONFIG_BYTES)
    return None if data is None else data.decode("utf-8", "surrogateescape")


# -- the config file format (a port of config.c's parser) --------------------------------


class ConfigError(ValueError):
    def __init__(self, message: str, entries: Entries) -> None:
        super().__init__(message)
        self.entries = entries


_SPACE = frozenset(" \t\n\r")  # git's isspace()
_KEY_RUN = re.compile(r"[A-Za-z0-9-]*")
_SECTION_RUN = re.compile(r"[A-Za-z0-9.-]*")
_VALUE_RUN = re.compile(r'[^\\"\n;# \t\r]+')
_SKIP = re.compile(r"(?:[ \t\n\r]+|[#;][^\n]*)*")


def parse_config(text: str) -> Entries:
    """(canonical key, value) pairs; raises ConfigError (with the pairs before the error)
    where git would report a bad config line."""
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    text += "\n"  # git reads "\n" at end of file
    entries: Entries = []
    base, pos, end = "", 0, len(text)
    while True:
        pos = _SKIP.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= end:
            return entries
        c = text[pos]
        if c == "[":
            base, pos = _section_header(text, pos + 1, entries)
        elif c.isascii() and c.isalpha():
            run = _KEY_RUN.match(text, pos).end()  # type: ignore[union-attr]
            key = base + text[pos:run].lower()
            pos = run
            while text[pos] in " \t":
                pos += 1
            if text[pos] == "\n":
                entries.append((key, None))
                pos += 1
            elif text[pos] == "=":
                value, pos = _value(text, pos + 1, entries)
                entries.append((key, value))
            else:
                raise ConfigError("bad config line", entries)
        else:
            raise ConfigError("bad config line", entries)


def _section_header(text: str, pos: int, entries: Entries) -> tuple[str, int]:
    run = _SECTION_RUN.match(text, pos).end()  # type: ignore[union-attr]
    name = text[pos:run].lower()
    pos = run
    if text[pos] in _SPACE:  # [section "subsection"]
        while text[pos] in _SPACE:
            if text[pos] == "\n":
                raise ConfigError("incomplete section header", entries)
            pos += 1
        if text[pos] != '"':
            raise ConfigError("bad section header", entries)
        pos += 1
        sub = []
        while text[pos] != '"':
            if text[pos] == "\\":
                pos += 1
            if text[pos] == "\n":
                raise ConfigError("incomplete section header", entries)
            sub.append(text[pos])
            pos += 1
        pos += 1
        name += "." + "".join(sub)
    if text[pos] != "]" or not name:
        raise ConfigError("bad section header", entries)
    return name + ".", pos + 1


_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}


def _value(text: str, pos: int, entries: Entries) -> tuple[str, int]:
    out: list[str] = []
    quote, spaces, length = False, 0, 0
    while True:
        c = text[pos] if pos < len(text) else "\n"
        pos += 1
        if c == "\n":
            if quote:
                raise ConfigError("unterminated quote", entries)
            return "".join(out), pos
        if c in _SPACE and not quote:
            spaces += 1 if length else 0
            continue
        if not quote and c in ";#":
            # A comment runs to the end of the line.
            pos = text.index("\n", pos - 1)
            continue
        if spaces:
            out.append(" " * spaces)
            length += spaces
            spaces = 0
        if c == "\\":
            c = text[pos] if pos < len(text) else "\n"
            pos += 1
            if c == "\n":
                continue
            if c not in _ESCAPES:
                raise ConfigError("bad escape in value", entries)
            out.append(_ESCAPES[c])
        elif c == '"':
            quote = not quote
            continue
        else:
            run = _VALUE_RUN.match(text, pos - 1) if not quote else None
            if run:
                out.append(run.group())
                length += len(run.group())
                pos = run.end()
                continue
            out.append(c)
        length += 1


def canonical(key: str) -> str:
    """`key` as the parser spells it: section and name lower-cased, subsection kept."""
    section, sub, name = split_key(key)
    return f"{section}.{sub}.{name}" if sub is not None else f"{section}.{name}"


def split_key(key: str) -> tuple[str, str | None, str]:
    """(section, subsection, name) as git's parse_config_key splits them: section and name
    are case-insensitive, the subsection is everything between the first and last dot."""
    first, last = key.find("."), key.rfind(".")
    if first < 0:
        return "", None, key.lower()
    sub = key[first + 1 : last] if last > first else None
    return key[:first].lower(), sub, key[last + 1 :].lower()


def join_key(section: str, sub: str | None) -> str:
    """`section` or `section.sub`: the part of a key before its name."""
    return section if sub is None else f"{section}.{sub}"
