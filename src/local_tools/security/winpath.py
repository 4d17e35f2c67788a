"""Windows path rules for the jail, as pure functions over strings.

These run on every platform (string rules only, never a call to the OS), so the
rules are unit-tested on Linux and checked against `ntpath` there. `Jail` calls
them for every path when `os.name == "nt"`.

What is refused and why:

- `\\\\?\\`, `\\\\.\\` and `\\??\\` paths: they skip Win32 normalization and reach
  devices and raw volumes (PermissionDenied).
- Drive-relative `C:foo` and rooted `\\foo`: they depend on a per-drive current
  directory the agent cannot see (InvalidInput).
- Reserved device names (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$, CONOUT$), in any
  case and with any extension: opening `nul.txt` opens the device (InvalidInput).
- `:` after the drive: `file:stream` is an NTFS alternate data stream, a hidden
  second file behind a visible one (InvalidInput).
- Trailing dots or spaces in a component: Windows strips them, so `secret.txt.`
  is another spelling of `secret.txt` (InvalidInput).
- 8.3 short names such as `PROGRA~1`: another spelling of a long name, which would
  slip past name-based checks (InvalidInput).

Windows collapses `..` textually before it looks at the file system, so
normalization here is lexical, which is the OS's own semantics.
Root containment compares components case-insensitively.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from local_tools.core.errors import InvalidInput, PermissionDenied

__all__ = [
    "WINDOWS_SYSTEM_DIRS",
    "check_windows_component",
    "check_windows_path",
    "is_windows_reserved_name",
    "is_windows_system_path",
    "windows_relative_to",
    "windows_system_dirs",
]

WINDOWS_SYSTEM_DIRS: tuple[str, ...] = (
    "C:\\Windows",
    "C:\\Program Files",
    "C:\\Program Files (x86)",
    "C:\\ProgramData\\Microsoft",
)

_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{dev}{n}" for dev in ("COM", "LPT") for n in (*"0123456789", "¹", "²", "³")}
)
# Characters Win32 refuses in names; ':' is handled apart (drive vs. stream).
_BAD_CHARS = frozenset('<>"|?*') | frozenset(chr(i) for i in range(32))
_SHORT_NAME = re.compile(r"[^.~\\]{1,6}~[0-9]+(\.[^.]{0,3})?")
_DRIVE = re.compile(r"[A-Za-z]:")
_MAX_COMPONENT = 255


def _shown(path: str) -> str:
    return path if len(path) <= 200 else path[:200] + "…"


def is_windows_reserved_name(name: str) -> bool:
    """True for device names like `CON`, `nul.txt`, `Com1.log`, `aux .c`."""
    # Windows ignores the extension and trailing spaces of the base name here.
    base = name.split(".", 1)[0].rstrip(" ")
    return base.upper() in _RESERVED


def check_windows_component(name: str, *, path: str = "") -> None:
    """Raise InvalidInput if `name` is not a safe single Windows path component."""
    shown = _shown(path or name)
    if name in (".", ".."):
        return
    if len(name) > _MAX_COMPONENT:
        raise InvalidInput(
            f"Path '{shown}' has a component longer than {_MAX_COMPONENT} characters. "
            "Use shorter names."
        )
    if ":" in name:
        raise InvalidInput(
            f"Path '{shown}' contains ':' in '{name}', which names an NTFS alternate data "
            "stream. Use a plain file name without ':'."
        )
    bad = sorted({c for c in name if c in _BAD_CHARS})
    if bad:
        raise InvalidInput(
            f"Path '{shown}' contains characters Windows does not allow in names "
            f"({', '.join(repr(c) for c in bad)}). Remove them."
        )
    if name.endswith((".", " ")):
        raise InvalidInput(
            f"Path '{shown}' has a component ending in a dot or space ('{name}'); Windows "
            "strips those, so it would name a different file. Remove the trailing "
            "dot or space."
        )
    if is_windows_reserved_name(name):
        raise InvalidInput(
            f"Path '{shown}' uses '{name}', a reserved Windows device name (CON, PRN, AUX, "
            "NUL, COM1-9, LPT1-9). Choose another name."
        )
    if _SHORT_NAME.fullmatch(name):
        raise InvalidInput(
            f"Path '{shown}' uses '{name}', which looks like an 8.3 short name (NAME~1) "
            "and may alias a different long name. Use the full name."
        )


def check_windows_path(path: str) -> str:
    """Validate a Windows path and return it normalized.

    The result uses backslashes, has no empty or `.` components, and has `..`
    collapsed the way Win32 does it (textually). A relative path stays relative
    (and may start with `..`; the jail refuses that). Raises InvalidInput for
    malformed paths and PermissionDenied for device-namespace paths.
    """
    if not isinstance(path, str):
        raise InvalidInput(f"Path must be a string, got {type(path).__name__}.")
    if path == "":
        raise InvalidInput("Path is empty. Use '.' for the workspace root.")
    if "\x00" in path:
        raise InvalidInput(f"Path {_shown(path)!r} contains a null byte. Remove it.")
    p = path.replace("/", "\\")
    if p.startswith(("\\\\?\\", "\\\\.\\", "\\??\\")) or p in ("\\\\?", "\\\\."):
        raise PermissionDenied(
            f"Path '{_shown(path)}' is a Windows device-namespace path (\\\\?\\ or \\\\.\\), "
            "which bypasses path checks. Use an ordinary path inside the workspace."
        )
    drive, rest = _split_drive(p)
    if p.startswith("\\\\"):
        server, _, share = drive[2:].partition("\\")
        if not server or not share:
            raise InvalidInput(
                f"Path '{_shown(path)}' is an incomplete UNC path. Use \\\\server\\share\\..."
            )
        for part in (server, share):
            check_windows_component(part, path=path)
    elif drive:
        if not _DRIVE.fullmatch(drive):
            raise InvalidInput(f"Path '{_shown(path)}' has a malformed drive '{drive}'.")
        if not rest.startswith("\\"):
            raise InvalidInput(
                f"Path '{_shown(path)}' is drive-relative ('{drive}' without a backslash), "
                f"so it depends on a hidden current directory. Use '{drive}\\...' or a "
                "workspace-relative path."
            )
        drive = drive.upper()  # a stable spelling for messages and comparisons
    elif rest.startswith("\\"):
        raise InvalidInput(
            f"Path '{_shown(path)}' starts with a backslash but has no drive, so it depends "
            "on the current drive. Use a full path like C:\\... or a workspace-relative path."
        )
    parts: list[str] = []
    for name in rest.split("\\"):
        if name in ("", "."):
            continue
        check_windows_component(name, path=path)
        if name != "..":
            parts.append(name)
        elif parts and parts[-1] != "..":
            parts.pop()
        elif not drive:  # a relative path keeps leading '..' so the jail can refuse it
            parts.append(name)
        # at a drive or share root, Win32 ignores '..'
    if drive:
        return drive + "\\" + "\\".join(parts)
    return "\\".join(parts) or "."


def _split_drive(path: str) -> tuple[str, str]:
    """('C:', rest) or ('\\\\server\\share', rest) or ('', path); the same on every
    Python version (ntpath.splitdrive changed for incomplete UNC paths)."""
    if path.startswith("\\\\"):
        server, _, tail = path[2:].partition("\\")
        share, sep, rest = tail.partition("\\")
        return "\\\\" + server + ("\\" + share if share or sep else ""), sep + rest
    if len(path) >= 2 and path[1] == ":":
        return path[:2], path[2:]
    return "", path


def _key_parts(path: str) -> list[str]:
    drive, rest = _split_drive(path)
    parts = [drive.lower()] if drive else []
    parts += [p.lower() for p in rest.split("\\") if p not in ("", ".")]
    return parts


def windows_relative_to(path: str, root: str) -> list[str] | None:
    """Components of `path` below `root`, compared case-insensitively, or None.

    Both must already be normalized absolute paths (see check_windows_path). This is
    component-wise, so `C:\\ws-evil` is not inside `C:\\ws`.
    """
    full, base = _key_parts(path), _key_parts(root)
    if len(full) < len(base) or full[: len(base)] != base:
        return None
    _, rest = _split_drive(path)
    original = [p for p in rest.split("\\") if p not in ("", ".")]
    return original[len(base) - 1 :] if base else original


def windows_system_dirs() -> list[str]:
    """The protected directories: the fixed list plus where this machine has them."""
    dirs = list(WINDOWS_SYSTEM_DIRS)
    # The real locations when Windows lives on another drive.
    for var, tail in (
        ("SystemRoot", ""),
        ("ProgramFiles", ""),
        ("ProgramFiles(x86)", ""),
        ("ProgramData", "\\Microsoft"),
    ):
        value = os.environ.get(var) if os.name == "nt" else None
        if value:
            dirs.append(value + tail)
    return dirs


def is_windows_system_path(path: str, system_dirs: Iterable[str] | None = None) -> bool:
    """True if `path` (normalized, absolute) is a protected Windows system directory
    or inside one, compared case-insensitively."""
    dirs: Sequence[str] = list(system_dirs) if system_dirs is not None else windows_system_dirs()
    return any(windows_relative_to(path, check_windows_path(d)) is not None for d in dirs)
