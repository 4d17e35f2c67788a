"""Skills: folders of instructions an agent loads when a task calls for them.

A skill is a folder ``<name>/SKILL.md`` — front matter (``name``, ``description``)
between ``---`` lines, then the instructions — plus any files the instructions refer
to. openlink's flat form, a single file ``<name>.md`` in a skills folder, is a skill
too: its front matter is optional; without it the name is the file's stem and the
description its first non-empty line. (A ``README.md`` there is the folder's own
documentation, not a skill.) In one skills folder, ``<name>/SKILL.md`` wins over
``<name>.md`` of the same name, whichever is listed first.

Skills are found in the folders openlink and Claude use, in this order, the same
name (case-insensitive) in a later folder replacing an earlier one (whatever its
form), as openlink does:

1. the workspace's ``.skills``, ``.openlink/skills``, ``.agent/skills``,
   ``.claude/skills``, ``.local-tools/skills``;
2. the same folders in the user's home;
3. ``skills`` in the user's local-tools config folder.

The workspace may be a repository someone else wrote, so it is read through a jail of
its own: a skill (or skills folder, or SKILL.md) that is a symlink leading out of the
workspace is refused, with the reason, and the other skills still load. The user's
own folders may link anywhere. A SKILL.md that cannot be used (too big, not UTF-8,
broken front matter, a bad name) is reported for that skill alone.

Front matter is read by ``front_matter.parse_front_matter``, a small parser for what
skills use rather than a YAML library.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from local_tools.core.errors import InvalidInput, NotFound, ToolError
from local_tools.front_matter import FrontMatterError, parse_front_matter
from local_tools.security.jail import Jail

__all__ = [
    "MAX_FILES",
    "MAX_SKILL_BYTES",
    "SKILL_DIRS",
    "FrontMatterError",
    "Skill",
    "SkillError",
    "SkillSet",
    "check_name",
    "discover",
    "list_skills",
    "parse_front_matter",
]

# The skills folders of a workspace and of a home, earliest first (a later one wins):
# openlink's order, then ours.
SKILL_DIRS = (".skills", ".openlink/skills", ".agent/skills", ".claude/skills",
              ".local-tools/skills")  # fmt: skip
SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024  # instructions, not a manual: reference files go beside
MAX_FILES = 50  # other files listed per skill
MAX_FILE_DEPTH = 4  # folders below the skill's own that are listed
MAX_SKILLS_PER_DIR = 200  # each SKILL.md is read to list it
MAX_NAME_CHARS = 128
MAX_DESCRIPTION_CHARS = 1024
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})

Scope = Literal["workspace", "home", "config"]
_T = TypeVar("_T")


# --------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class Skill:
    name: str
    description: str  # one line ("" when the front matter has none)
    instructions: str  # SKILL.md without its front matter
    folder: Path  # absolute, as found (not resolved)
    skill_file: Path
    skills_dir: Path  # the skills folder it was found in
    scope: Scope
    flat: bool = False  # a `<name>.md` file: `folder` is its skills folder, no files of its own

    @property
    def key(self) -> str:
        return self.name.casefold()


@dataclass(frozen=True)
class SkillError:
    """A skill (or skills folder) that could not be loaded, and why."""

    name: str  # the folder's name
    path: Path
    message: str
    scope: Scope


@dataclass
class SkillSet:
    skills: dict[str, Skill] = field(default_factory=dict)  # by casefolded name
    errors: list[SkillError] = field(default_factory=list)
    _readers: dict[Scope, _Reader] = field(default_factory=dict, repr=False)

    def __iter__(self) -> Iterator[Skill]:
        """The skills by name."""
        return iter(sorted(self.skills.values(), key=lambda s: (s.key, s.name)))

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name.strip().casefold())

    def errors_for(self, name: str) -> list[SkillError]:
        """Load errors of folders named like `name` (e.g. a broken override)."""
        key = name.strip().casefold()
        return [e for e in self.errors if e.name.casefold() == key]

    def closest(self, name: str, names: list[str] | None = None, n: int = 3) -> list[str]:
        """Names that look like `name`, for "did you mean"."""
        pool = [s.name for s in self] if names is None else names
        by_key = {p.casefold(): p for p in pool}
        key = name.strip().casefold()
        close = difflib.get_close_matches(key, list(by_key), n=n, cutoff=0.5)
        close += [k for k in by_key if key and (key in k or k in key) and k not in close]
        return [by_key[k] for k in close[:n]]

    def files(self, skill: Skill) -> tuple[list[str], bool]:
        """The skill's other files, relative to its folder (at most MAX_FILES), and
        whether more were left out. Dotfiles and dot-folders are skipped; symlinked
        folders are listed, not entered."""
        if skill.flat:  # the files beside it are other skills, not its own
            return [], False
        reader = self._readers.get(skill.scope) or _HomeReader()
        found: list[str] = []
        queue: list[tuple[Path, str, int]] = [(skill.folder, "", 0)]
        while queue:
            folder, prefix, depth = queue.pop(0)
            try:
                entries = reader.entries(folder)
            except (ToolError, _NotADir):
                continue  # a subfolder that cannot be listed is left out
            for name, is_dir in entries:
                if name.startswith(".") or name in _SKIPPED_DIRS:
                    continue
                rel = f"{prefix}{name}"
                if is_dir:
                    if depth < MAX_FILE_DEPTH:
                        queue.append((folder / name, rel + "/", depth + 1))
                    continue
                if folder == skill.folder and folder / name == skill.skill_file:
                    continue
                if len(found) == MAX_FILES:
                    return found, True
                found.append(rel)
        return found, False


# --------------------------------------------------------------------------- names


def check_name(name: str) -> str:
    """`name` stripped, or ValueError saying what is wrong with it.

    A skill name is a name, not a path: no separators, no `..`, no control characters.
    """
    name = name.strip()
    if not name:
        raise ValueError("a skill name must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"a skill name has at most {MAX_NAME_CHARS} characters")
    if "/" in name or "\\" in name:
        raise ValueError(f"a skill name has no path separators: {name!r}")
    if ".." in name or name == ".":
        raise ValueError(f"a skill name must not be '.' or contain '..': {name!r}")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValueError(f"a skill name has no control characters: {name!r}")
    return name


# --------------------------------------------------------------------------- discovery


def discover(workspace: Path, home: Path | None = None, config_dir: Path | None = None) -> SkillSet:
    """Every skill of the workspace, the user's home (default: `Path.home()`) and the
    user's local-tools config folder (default: platformdirs' user config dir)."""
    if home is None:
        home = _default_home()
    if config_dir is None:
        config_dir = _default_config_dir()
    workspace = Path(workspace)
    jail = Jail(workspace)
    readers: dict[Scope, _Reader] = {"workspace": _JailReader(jail), "home": _HomeReader()}
    readers["config"] = readers["home"]
    result = SkillSet(_readers=readers)
    seen: set[str] = set()
    for scope, skills_dir in _skill_dirs(jail.root, home, config_dir):
        real = os.path.normcase(os.path.realpath(skills_dir))
        if real in seen:  # the workspace is the home, or a folder links to another
            continue
        if _load_dir(result, readers[scope], scope, skills_dir):
            seen.add(real)  # (one the workspace refused may still be the user's own)
    return result


def list_skills(workspace: Path) -> list[dict[str, str]]:
    """`{name, description}` of every skill, by name: what `GET /skills` answers."""
    return [{"name": s.name, "description": s.description} for s in discover(workspace)]


def _skill_dirs(
    workspace: Path, home: Path | None, config_dir: Path | None
) -> list[tuple[Scope, Path]]:
    dirs: list[tuple[Scope, Path]] = [("workspace", workspace / d) for d in SKILL_DIRS]
    if home is not None:
        dirs += [("home", home / d) for d in SKILL_DIRS]
    if config_dir is not None:
        dirs.append(("config", config_dir / "skills"))
    return dirs


def _default_home() -> Path | None:
    try:
        return Path.home()
    except RuntimeError:  # no HOME and no passwd entry: no personal skills
        return None


def _default_config_dir() -> Path:
    import platformdirs  # deferred: only needed here

    return Path(platformdirs.user_config_dir("local-tools", appauthor=False))


def _load_dir(result: SkillSet, reader: _Reader, scope: Scope, skills_dir: Path) -> bool:
    """Load the skills of one skills folder; False when it could not be listed."""
    try:
        entries = reader.entries(skills_dir)
    except (NotFound, _NotADir):
        return False
    except ToolError as exc:  # a skills folder linking out of the workspace, unreadable...
        result.errors.append(SkillError(skills_dir.name, skills_dir, exc.message, scope))
        return False
    candidates = [(name, is_dir) for name, is_dir in entries if not name.startswith(".")]
    if len(candidates) > MAX_SKILLS_PER_DIR:
        message = f"more than {MAX_SKILLS_PER_DIR} entries; only the first were loaded"
        result.errors.append(SkillError(skills_dir.name, skills_dir, message, scope))
    candidates = candidates[:MAX_SKILLS_PER_DIR]
    # Flat files first, folders after (a stable sort keeps the listing's order within
    # each): in one skills folder `<name>/SKILL.md` replaces `<name>.md`.
    flat = {n for n, is_dir in candidates if not is_dir and _is_flat_skill(n)}
    for name, _ in sorted(candidates, key=lambda entry: entry[0] not in flat):
        path = skills_dir / name
        try:
            if name in flat:
                skill = _load_flat_skill(reader, scope, skills_dir, path)
            else:
                skill = _load_skill(reader, scope, skills_dir, path)
        except _NotASkill:
            continue
        except (ToolError, ValueError) as exc:
            message = exc.message if isinstance(exc, ToolError) else str(exc)
            where = exc.path if isinstance(exc, _SkillFileError) else path
            label = Path(name).stem if name in flat else name
            result.errors.append(SkillError(label, where, message, scope))
            continue
        result.skills[skill.key] = skill  # a later folder replaces an earlier one
    return True


def _is_flat_skill(file_name: str) -> bool:
    """`<name>.md` (any case), but not the skills folder's README."""
    stem, _, suffix = file_name.rpartition(".")
    return bool(stem) and suffix.casefold() == "md" and stem.casefold() != "readme"


class _NotASkill(Exception):
    """A file, or a folder without SKILL.md: not a skill, nothing to report."""


class _SkillFileError(ValueError):
    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def _load_skill(reader: _Reader, scope: Scope, skills_dir: Path, folder: Path) -> Skill:
    try:
        entries = reader.entries(folder)
    except (NotFound, _NotADir):
        raise _NotASkill from None
    names = [n for n, is_dir in entries if not is_dir and n.casefold() == SKILL_FILE.casefold()]
    if not names:
        raise _NotASkill
    file_name = SKILL_FILE if SKILL_FILE in names else names[0]
    skill_file = folder / file_name
    name, description, body = _read_skill_file(reader, skill_file, folder.name, flat=False)
    return Skill(name, description, body, folder, skill_file, skills_dir, scope)


def _load_flat_skill(reader: _Reader, scope: Scope, skills_dir: Path, skill_file: Path) -> Skill:
    """openlink's `<name>.md`: the skill's folder is the skills folder it lies in."""
    stem = skill_file.name.rpartition(".")[0]
    name, description, body = _read_skill_file(reader, skill_file, stem, flat=True)
    return Skill(name, description, body, skills_dir, skill_file, skills_dir, scope, flat=True)


def _read_skill_file(
    reader: _Reader, skill_file: Path, default_name: str, *, flat: bool
) -> tuple[str, str, str]:
    """(name, description, instructions) of a skill file; _SkillFileError saying why not.

    A flat file without a description takes its first non-empty line (a heading's
    text without the `#`s): openlink's files have no front matter.
    """
    file_name = skill_file.name
    data = reader.read(skill_file, MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise _SkillFileError(
            f"{file_name} is larger than {MAX_SKILL_BYTES // 1024} KB; keep the instructions "
            "short and move reference material into other files in the folder",
            skill_file,
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _SkillFileError(
            f"{file_name} is not UTF-8 text (byte {exc.start})", skill_file
        ) from None
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as exc:
        raise _SkillFileError(str(exc), skill_file) from None
    name, description = meta.get("name", ""), meta.get("description", "")
    for key, value in (("name", name), ("description", description)):
        if value is None:
            raise _SkillFileError(f"the front matter's {key} must be text", skill_file)
    try:
        name = check_name(name or default_name)
    except ValueError as exc:
        raise _SkillFileError(f"bad name: {exc}", skill_file) from None
    if flat and not description:
        first = next((line for line in body.splitlines() if line.strip()), "")
        description = first.strip().lstrip("#").strip()
    description = " ".join((description or "").split())
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return name, description, body


# --------------------------------------------------------------------------- readers


class _NotADir(Exception):
    pass


class _Reader:
    """Lists folders and reads files, with or without the workspace's rules."""

    def entries(self, folder: Path) -> list[tuple[str, bool]]:
        """(name, is a folder to enter) by name; NotFound, _NotADir or ToolError."""
        raise NotImplementedError

    def read(self, path: Path, limit: int) -> bytes:
        """At most `limit` bytes of a regular file; ToolError if it cannot be read."""
        raise NotImplementedError


class _JailReader(_Reader):
    """The workspace: every path through a jail of the workspace alone."""

    def __init__(self, jail: Jail) -> None:
        self.jail = jail

    def entries(self, folder: Path) -> list[tuple[str, bool]]:
        try:
            listed = self.jail.scandir(str(folder))
        except InvalidInput:  # a file, not a folder
            raise _NotADir from None
        # A symlink is listed, not entered (a skill that is a symlink is still read:
        # through it, by path, where the jail decides).
        return [(e.name, e.kind == "directory") for e in listed]

    def read(self, path: Path, limit: int) -> bytes:
        with self.jail.open_read(str(path)) as handle:
            return handle.read(limit)


class _HomeReader(_Reader):
    """The user's own folders: symlinks are followed wherever they lead."""

    def entries(self, folder: Path) -> list[tuple[str, bool]]:
        def listing() -> list[tuple[str, bool]]:
            with os.scandir(folder) as it:
                return sorted((e.name, _entry_is_dir(e)) for e in it)

        return _os_call(folder, listing)

    def read(self, path: Path, limit: int) -> bytes:
        def once() -> bytes:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"{path} is not a regular file")
            with open(path, "rb") as handle:  # the user's own file, found by listing
                return handle.read(limit)

        return _os_call(path, once)


def _entry_is_dir(entry: os.DirEntry[str]) -> bool:
    # A linked folder is listed, not entered: a link loop would list itself to the cap.
    # (Skills that are symlinks are still read through them, by path.)
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _os_call(path: Path, func: Callable[[], _T]) -> _T:
    try:
        return func()
    except FileNotFoundError:
        raise NotFound(f"{path} does not exist") from None
    except NotADirectoryError:
        raise _NotADir from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None
