"""Path resolution: from the text a tool was given to a checked directory descriptor.

Containment is decided by the kernel or by our own symlink walk, never by comparing
strings. A path is accepted when the file it names, with every symlink followed
(the final one too), lies inside an allowed root.

Engines (all enforce the same policy and pass the same tests):

- ``openat2``: Linux 5.6+. The parent directory is opened with ``openat2(2)`` and
  ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` from a descriptor of the root, so the
  kernel itself refuses `..` and symlinks leaving it. Anything unusual (an escape
  attempt, an absolute symlink, a missing parent, a final symlink) is handed to the
  walk, which gives the authoritative answer and the error message.
- ``walk``: POSIX without openat2. Component by component with ``O_NOFOLLOW`` and
  ``dir_fd``; symlinks are read with ``readlink`` and resolved by us against the root
  (at most 40 hops), refusing any step above it.
- ``path``: no ``dir_fd`` (Windows). The same walk over path strings. It shares the
  policy but not the TOCTOU guarantee: a directory swapped for a symlink between the
  check and the use can redirect it.

Policy decisions:

- Absolute symlinks are followed only when their target, as written, lies inside an
  allowed root (component-wise; it must spell the root's real path); resolution then
  continues beneath that root. Relative symlinks may not climb above the root they are
  resolved in. The openat2 engine gets this by deferring absolute links to the walk,
  because ``RESOLVE_BENEATH`` refuses every absolute link.
- ``/proc`` links below ``/proc/<pid>`` (``root``, ``cwd``, ``exe``, ``fd/N``) are never
  followed, like ``RESOLVE_NO_MAGICLINKS``.
- `..` that lexically climbs above the root is refused before touching the disk, even
  if a symlink would bring it back (``link/../../x``); `..` below a missing component
  is NotFound, as in the kernel.
- Empty and `.` components are dropped, so a trailing `/` changes nothing: ``link/``
  names the link (``delete`` removes the link, not what it points to).
- ``~`` is not expanded: a path starting with ``~`` is refused rather than silently
  becoming a folder named ``~``. ``%2e%2e`` and other encodings stay literal.
"""

from __future__ import annotations

import os
import stat as stat_mod
import sys
from collections import deque
from pathlib import Path
from typing import Literal

from local_tools.core.errors import (
    InvalidInput,
    NotFound,
    PermissionDenied,
    StorageError,
    ToolError,
)
from local_tools.security import winpath
from local_tools.security.dirfd import Dir, Loc, is_link
from local_tools.security.os_errors import Changed
from local_tools.security.pathparts import abs_parts, is_abs, rel_parts, shown, split
from local_tools.security.roots import Root, Roots
from local_tools.security.syscalls import (
    DIR_FLAGS,
    IS_WINDOWS,
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    O_PATH,
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    fd_path,
    openat2,
    openat2_available,
)

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "Engine",
    "EngineName",
    "Resolver",
    "pick_engine",
]

Engine = Literal["auto", "openat2", "walk", "path"]
EngineName = Literal["openat2", "walk", "path"]

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
MAX_SYMLINK_HOPS = 40


def pick_engine(engine: str) -> EngineName:
    fd_ok = not IS_WINDOWS and os.open in os.supports_dir_fd and bool(O_NOFOLLOW)
    if engine == "auto":
        return "openat2" if openat2_available() else ("walk" if fd_ok else "path")
    if engine == "openat2":
        if not openat2_available():
            raise InvalidInput(
                "engine='openat2' is not available here (needs Linux 5.6+ and no seccomp "
                "filter blocking it). Use engine='auto'."
            )
        return "openat2"
    if engine == "walk":
        if not fd_ok:
            raise InvalidInput("engine='walk' needs dir_fd support. Use engine='auto'.")
        return "walk"
    if engine == "path":
        return "path"
    raise InvalidInput(f"Unknown engine {engine!r}. Use 'auto', 'openat2', 'walk' or 'path'.")


class Resolver:
    """Resolves paths beneath `roots` with one engine; see the module docstring."""

    def __init__(self, engine: EngineName, roots: Roots) -> None:
        self.engine = engine
        self.roots = roots

    def locate(self, path: str, *, follow_final: bool) -> Loc:
        root, rel = self._parse(path)
        if self.engine == "openat2":
            return self._locate_openat2(root, rel, follow_final, path)
        return self._walk(root, rel, follow_final, path)

    # ------------------------------------------------------------------ parsing

    def _parse(self, path: object) -> tuple[Root, list[str]]:
        """Validate the text of a path; pick the root it is relative to."""
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise InvalidInput(f"Path must be a string, got {type(path).__name__}.")
        if path == "":
            raise InvalidInput("Path is empty. Use '.' for the workspace root.")
        if "\x00" in path:
            raise InvalidInput(f"Path '{shown(path)}' contains a null byte. Remove it.")
        try:
            size = len(os.fsencode(path))
        except UnicodeError:
            raise InvalidInput(
                f"Path '{shown(path)}' contains characters that cannot be encoded as a "
                "file name. Use valid UTF-8 text."
            ) from None
        if size > MAX_PATH_BYTES:
            raise InvalidInput(
                f"Path '{shown(path)}' is {size} bytes long; the limit is {MAX_PATH_BYTES}. "
                "Use a shorter path."
            )
        if IS_WINDOWS:
            path = winpath.check_windows_path(path)
        raw = path.replace("\\", "/") if IS_WINDOWS else path
        for comp in raw.split("/"):
            if len(os.fsencode(comp)) > MAX_NAME_BYTES:
                raise InvalidInput(
                    f"Path '{shown(path)}' has a component longer than {MAX_NAME_BYTES} "
                    "bytes. Use shorter names."
                )
        if raw.split("/", 1)[0] == "~":
            raise InvalidInput(
                f"Path '{shown(path)}' starts with '~', which is not expanded here. Use a "
                "workspace-relative path, or an absolute path inside an allowed root."
            )
        if is_abs(path):
            root, rel = self._map_absolute(path)
        else:
            root, rel = self.roots.items[0], split(path)
        depth = 0
        for comp in rel:
            depth += -1 if comp == ".." else 1
            if depth < 0:  # conservative: refused even if a symlink would come back
                raise self.roots.outside(path)
        return root, rel

    def _map_absolute(self, path: str) -> tuple[Root, list[str]]:
        mapped = self.roots.map_lexical(path)
        if mapped is None:
            # Maybe another spelling of a root (a symlinked ancestor, /var vs
            # /private/var). realpath only picks the root; the engine still resolves
            # the remainder beneath it, so this cannot widen what is reachable.
            try:
                mapped = self.roots.map_lexical(os.path.realpath(path))
            except (OSError, ValueError):
                mapped = None
        if mapped is None:
            raise self.roots.outside(path)
        return mapped

    # ------------------------------------------------------------------ resolution

    def _open_root(self, root: Root) -> Dir:
        """Reopened for every operation, so a recreated workspace keeps working."""
        text = str(root.path)
        if self.engine == "path":
            if not os.path.isdir(text) or os.path.islink(text):
                raise StorageError(f"The {root.kind} {text} no longer exists as a directory.")
            return Dir(None, text)
        try:
            try:
                fd = os.open(text, DIR_FLAGS)
            except PermissionError:
                fd = os.open(text, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        except OSError:
            raise StorageError(
                f"The {root.kind} {text} no longer exists as a directory (it was removed "
                "or replaced). Recreate it or restart with another root."
            ) from None
        return Dir(fd, text)

    def _locate_openat2(self, root: Root, rel: list[str], follow_final: bool, path: str) -> Loc:
        """Fast path: the kernel resolves the parent beneath the root. Anything it
        refuses or that needs policy goes to the walk for the final answer."""
        if rel and rel[-1] == "..":
            return self._walk(root, rel, follow_final, path)
        base = self._open_root(root)
        try:
            assert base.fd is not None
            parent = "/".join(rel[:-1]) or "."
            resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
            try:
                fd = openat2(base.fd, parent, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC, resolve)
            except PermissionError:
                try:
                    fd = openat2(base.fd, parent, O_PATH | O_DIRECTORY | O_CLOEXEC, resolve)
                except OSError:
                    return self._walk(root, rel, follow_final, path)
            except OSError:  # EXDEV, ELOOP, ENOENT, EAGAIN...: the walk decides
                return self._walk(root, rel, follow_final, path)
        finally:
            base.close()
        real = fd_path(fd)
        parts = rel_parts(abs_parts(real), root.parts) if real else None
        found = Dir(fd, real or "")
        if parts is None:  # no /proc, or moved meanwhile: let the walk decide
            found.close()
            return self._walk(root, rel, follow_final, path)
        if not rel:
            return Loc(root, found, tuple(parts), ())
        if follow_final:
            try:
                final_is_link = is_link(found.lstat(rel[-1]))
            except FileNotFoundError:
                final_is_link = False
            except BaseException:
                found.close()
                raise
            if final_is_link:  # the walk applies the symlink policy
                found.close()
                return self._walk(root, rel, follow_final, path)
        return Loc(root, found, tuple(parts), (rel[-1],))

    def _walk(self, root: Root, rel: list[str], follow_final: bool, path: str) -> Loc:
        """Resolve component by component, following symlinks ourselves."""
        stack = [self._open_root(root)]
        try:
            canon: list[str] = []
            todo = deque(rel)
            tail: list[str] = []
            hops = 0
            while todo:
                comp = todo.popleft()
                if tail:  # below a missing component
                    if comp == "..":
                        raise NotFound(
                            f"Path '{shown(path)}' does not exist: '{tail[0]}' is missing, "
                            "so '..' after it cannot be resolved."
                        )
                    tail.append(comp)
                    continue
                if comp == "..":
                    if not canon:
                        raise self.roots.outside(path)
                    stack.pop().close()
                    canon.pop()
                    continue
                here = stack[-1]
                try:
                    st = here.lstat(comp)
                except FileNotFoundError:
                    tail.append(comp)
                    continue
                last = not todo
                if is_link(st) and (follow_final or not last):
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise InvalidInput(
                            f"Path '{shown(path)}' goes through more than "
                            f"{MAX_SYMLINK_HOPS} symlinks (a symlink loop?)."
                        )
                    where = root.path.joinpath(*canon, comp)
                    self._refuse_magic(where, path)
                    try:
                        target = here.readlink(comp)
                    except OSError:  # no longer a symlink
                        raise Changed from None
                    if not target:
                        raise NotFound(f"Path '{shown(path)}' goes through an empty symlink.")
                    if is_abs(target) or (IS_WINDOWS and target.startswith("\\")):
                        mapped = self._map_link_target(target)
                        if mapped is None:
                            raise PermissionDenied(
                                f"Path '{shown(path)}' goes through the symlink "
                                f"'{self.roots.display(where)}' -> '{shown(target)}', which "
                                f"points outside the workspace {self.roots.workspace}. Use a "
                                "path inside it."
                            )
                        root, target_parts = mapped
                        while stack:
                            stack.pop().close()
                        stack.append(self._open_root(root))
                        canon = []
                    else:
                        target_parts = split(target)
                    todo.extendleft(reversed(target_parts))
                    continue
                if last:
                    tail.append(comp)
                    continue
                if not stat_mod.S_ISDIR(st.st_mode):
                    raise NotFound(
                        f"Path '{shown(path)}' does not exist: '{comp}' is a file, not a directory."
                    )
                stack.append(here.child(comp))
                canon.append(comp)
            return Loc(root, stack.pop(), tuple(canon), tuple(tail))
        finally:
            for d in stack:
                d.close()

    def _map_link_target(self, target: str) -> tuple[Root, list[str]] | None:
        if IS_WINDOWS:
            # readlink reports junctions as \\?\C:\...; that prefix is only a spelling.
            if target.startswith("\\\\?\\UNC\\"):
                target = "\\\\" + target[8:]
            elif target.startswith(("\\\\?\\", "\\??\\")):
                target = target[4:]
            try:
                target = winpath.check_windows_path(target)
            except ToolError:
                return None
            if not is_abs(target):
                return None
        return self.roots.map_lexical(target)

    def _refuse_magic(self, where: Path, path: str) -> None:
        if not sys.platform.startswith("linux"):
            return
        below = rel_parts(abs_parts(str(where)), ("/", "proc"))
        # /proc/self and /proc/mounts are plain links; deeper ones (root, cwd, exe,
        # fd/N) jump to another process's view of the file system.
        if below is not None and len(below) >= 2:
            raise PermissionDenied(
                f"Path '{shown(path)}' goes through '{where}', a /proc link into a "
                "process's files or root; those are never followed."
            )
