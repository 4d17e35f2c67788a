"""The allowed roots, and which real paths inside them may be written.

A path is accepted when what it names lies inside an allowed root; writes also need
a writable root and must stay out of the system directories. The roots' own real
paths are fixed at construction (``realpath`` once), so every later decision compares
real components and never re-reads a symlink that could have been swapped.
Everything here works on real paths already produced by resolution; nothing here
touches the disk except the construction-time checks.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from local_tools.core.errors import InvalidInput, PermissionDenied
from local_tools.security import winpath
from local_tools.security.pathparts import abs_parts, is_abs, rel_parts, shown
from local_tools.security.syscalls import IS_WINDOWS

__all__ = ["POSIX_SYSTEM_DIRS", "Root", "Roots", "StrPath"]

StrPath = str | os.PathLike[str]

POSIX_SYSTEM_DIRS: tuple[str, ...] = (
    "/etc", "/bin", "/sbin", "/usr", "/boot", "/lib", "/lib32", "/lib64", "/libx32",
    "/proc", "/sys", "/dev", "/var/lib",
)  # fmt: skip


@dataclass(frozen=True)
class Root:
    path: Path
    writable: bool
    kind: str  # "workspace" | "read-only root" | "writable root"

    @property
    def parts(self) -> tuple[str, ...]:
        return abs_parts(str(self.path))


def _real_dir(path: StrPath, label: str) -> Path:
    text = os.fspath(path)
    if not isinstance(text, str) or not text or "\x00" in text:
        raise InvalidInput(f"{label} {shown(text)!r} is not a valid path.")
    real = os.path.realpath(os.path.abspath(text))
    if not os.path.isdir(real):
        raise InvalidInput(
            f"{label} '{shown(text)}' does not exist or is not a directory. "
            "Create it first or pick another directory."
        )
    return Path(real)


def _system_dirs() -> list[tuple[str, ...]]:
    names = winpath.windows_system_dirs() if IS_WINDOWS else list(POSIX_SYSTEM_DIRS)
    out: list[tuple[str, ...]] = []
    for name in names:
        # Also the real location: /bin -> /usr/bin on merged-/usr systems.
        for variant in {name, os.path.realpath(name)}:
            parts = abs_parts(variant)
            if parts not in out:
                out.append(parts)
    return out


class Roots:
    """The workspace (first, writable) plus the extra roots, and the write policy."""

    def __init__(
        self,
        root: StrPath,
        extra_roots: Sequence[StrPath],
        writable_roots: Sequence[StrPath],
    ) -> None:
        workspace = Root(_real_dir(root, "Workspace root"), True, "workspace")
        roots = [workspace]
        for items, writable, kind in (
            (extra_roots, False, "read-only root"),
            (writable_roots, True, "writable root"),
        ):
            for item in items:
                real = _real_dir(item, kind.capitalize())
                # First listing wins, and read-only ones come first: the safer reading.
                if all(r.path != real for r in roots):
                    roots.append(Root(real, writable, kind))
        self.workspace: Path = workspace.path
        # Fixed with the roots: display() runs several times a call.
        self._workspace_text = str(workspace.path)
        self._workspace_parts = workspace.parts
        self.items: tuple[Root, ...] = tuple(roots)
        self.system = _system_dirs()

    def display(self, path: StrPath) -> str:
        """Workspace-relative with forward slashes ("." for the root); else absolute."""
        text = os.fspath(path)
        if not is_abs(text):
            text = os.path.join(self._workspace_text, text)
        parts = abs_parts(text)
        base = self._workspace_parts
        if IS_WINDOWS:
            rel = rel_parts(parts, base)
        else:  # case-sensitive: one tuple comparison
            rel = list(parts[len(base) :]) if parts[: len(base)] == base else None
        if rel is None:
            return text
        return "/".join(rel) or "."

    def is_writable(self, path: StrPath) -> bool:
        """Whether a resolved real path may be written (no disk access)."""
        text = os.fspath(path)
        real = Path(text) if is_abs(text) else self.workspace / text
        root = self.innermost(real)
        return root is not None and root.writable and self.system_dir(real, root) is None

    def outside(self, path: object) -> PermissionDenied:
        others = [str(r.path) for r in self.items[1:]]
        hint = f" or inside one of the allowed roots ({', '.join(others)})" if others else ""
        return PermissionDenied(
            f"Path '{shown(path)}' is outside the workspace {self.workspace}. "
            f"Use a path inside the workspace{hint}."
        )

    def map_lexical(self, path: str) -> tuple[Root, list[str]] | None:
        parts = abs_parts(path)
        best: tuple[Root, list[str]] | None = None
        for root in self.items:
            rel = rel_parts(parts, root.parts)
            # The outermost root containing it: the widest area `..` may move in.
            if rel is not None and (best is None or len(root.parts) < len(best[0].parts)):
                best = (root, rel)
        return best

    def innermost(self, real: Path) -> Root | None:
        parts = abs_parts(str(real))
        best: Root | None = None
        for root in self.items:
            if rel_parts(parts, root.parts) is not None and (
                best is None or len(root.parts) > len(best.parts)
            ):
                best = root
        return best

    def system_dir(self, real: Path, root: Root) -> str | None:
        """The system directory containing `real`, unless the user put this root
        inside it on purpose (e.g. a workspace under /usr/local/src)."""
        parts = abs_parts(str(real))
        for sysdir in self.system:
            if rel_parts(parts, sysdir) is not None and not rel_parts(root.parts, sysdir):
                return str(PureWindowsPath(*sysdir) if IS_WINDOWS else Path(*sysdir))
        return None

    def check_writable(self, real: Path, path: object) -> None:
        root = self.innermost(real)
        if root is None:
            raise self.outside(path)
        if not root.writable:
            raise PermissionDenied(
                f"Path '{shown(path)}' is in the read-only root {root.path}: it can be "
                f"read but not changed. Write inside the workspace {self.workspace} instead."
            )
        sysdir = self.system_dir(real, root)
        if sysdir is not None:
            raise PermissionDenied(
                f"Path '{shown(path)}' is inside the system directory {sysdir}, which is "
                f"never writable. Write inside the workspace {self.workspace} instead."
            )

    def refuse_protected_inside(
        self, real: Path, path: str, action: str = "deleted recursively"
    ) -> None:
        """Recursive delete (or a move) must not take a nested root or a system directory."""
        parts = abs_parts(str(real))
        writable_root = self.innermost(real)
        for root in self.items:
            if rel_parts(root.parts, parts):
                raise PermissionDenied(
                    f"Directory '{shown(path)}' contains the {root.kind} {root.path}, so "
                    f"it cannot be {action}. Use other entries instead."
                )
        for sysdir in self.system:
            if (
                rel_parts(sysdir, parts)
                and writable_root is not None
                and not rel_parts(writable_root.parts, sysdir)
            ):
                raise PermissionDenied(
                    f"Directory '{shown(path)}' contains a system directory, so it cannot "
                    f"be {action}."
                )
