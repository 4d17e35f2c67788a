"""What git trusts beyond a root's own `.git`: found by the repository scan, not by name.

`git_protected(roots)` adds to the protected paths (security/trusted_paths.py) what the
user's own git would run code from, inside the roots:
- each repository git enters by itself from a root: the root's, and every populated
  submodule recorded as a gitlink in an index (a nested `vendor/.git` folder, or the
  `gitdir:` file that sends git to `.git/modules/vendor`), with their git dirs' config,
  hooks, info and commondir, and the common dir's (a worktree's, or one `commondir` names);
- the folder `core.hooksPath` names (husky's `.githooks`), and every file an
  `include.path` / `includeIf.*.path` names, existing or not.
A nested repository that no index records is not entered by git from the root, and is
not protected: the user entering it runs what the command that made it chose.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from local_tools.security.hidden_paths import is_secret_name
from local_tools.security.real_path import real_path
from local_tools.security.trusted_paths import Protected, git_dir_paths, git_paths
from local_tools.shell.git_discovery import (
    Repository,
    RepositoryScan,
    index_names,
    scan_repositories,
)

__all__ = ["entered", "git_protected", "outside_reach", "tracked_secrets"]


def git_protected(roots: Iterable[Path]) -> list[Protected]:
    """The git paths to protect under `roots`, beyond each root's own `.git` (see above)."""
    reals = [(Path(real), real.rstrip("/") + "/") for real in map(real_path, roots)]
    out: dict[Path, Protected] = {}

    def holder(path: str) -> tuple[Path, Path] | None:
        real = real_path(path)
        for root, below in reals:
            # `root in Path(real).parents`, on the resolved strings: pathlib is slow
            if real.startswith(below) and real != below:
                return Path(real), root
        return None

    def add(entry: Protected) -> None:
        out.setdefault(entry.path, entry)

    for root, _ in reals:
        if not os.path.lexists(root / ".git"):
            continue  # no repository here: nothing for git to enter from it
        scan = scan_repositories(root)
        for repo in scan.repositories:
            if repo.worktree is not None and (found := holder(repo.worktree + "/.git")):
                dotgit, top = found
                if dotgit.parent != top:  # a submodule's `.git` (the root's is listed)
                    # Its `.git` as it is: a folder whose parts are listed below, or a
                    # `gitdir:` file kept as it is.
                    add(git_paths(dotgit, top)[0])
            for gitdir in dict.fromkeys((repo.gitdir, repo.common)):
                if (found := holder(gitdir)) is not None:
                    for entry in git_dir_paths(*found):
                        add(entry)
            if repo.hooks_path and (found := holder(repo.hooks_path)) is not None:
                add(Protected(found[0], found[1], tree=True, checked=True))
        for name in scan.files:
            if (found := holder(name)) is not None:
                add(Protected(found[0], found[1], checked=_outside_git(found[0], found[1])))
    return list(out.values())


def _outside_git(path: Path, root: Path) -> bool:
    """Not inside a `.git` folder (whose replacement the check notices on its own)."""
    return not any(p.name == ".git" for p in path.parents if root in p.parents)


def tracked_secrets(scan: RepositoryScan) -> list[str]:
    """The `.env`-style files the index of a repository found holds: `git show`, `git log
    -p` and `git diff` print their committed content, which hiding the file does not stop
    (an empty file in its place even shows it as deleted)."""
    found: list[str] = []
    for repo in entered(scan):
        found += [n for n in index_names(scan, repo, ".env") if is_secret_name(n.rsplit("/")[-1])]
    return list(dict.fromkeys(found))


def outside_reach(scan: RepositoryScan, roots: Iterable[Path]) -> str | None:
    """Where git run here would read a repository outside the roots: a work tree above
    them (the workspace inside a bigger repository), a `gitdir:` file, `commondir` or
    `core.worktree` leading elsewhere. None when every repository is inside."""
    reals = [Path(os.path.realpath(r)) for r in roots]

    def inside(path: str) -> bool:
        real = Path(os.path.realpath(path))
        return any(real == r or r in real.parents for r in reals)

    for repo in entered(scan):
        places = [repo.worktree, repo.core_worktree]
        if not _linked_worktree(repo):
            places += [repo.gitdir, repo.common]
        for place in places:
            if place is not None and not inside(place):
                return place
    return None


def _linked_worktree(repo: Repository) -> bool:
    """A worktree made by `git worktree add`: its git dir (in the main repository's
    `.git/worktrees/`) names this work tree's `.git` file back; that repository's history
    is this work tree's own."""
    if repo.worktree is None:
        return False
    dotgit = os.path.join(repo.worktree, ".git")
    try:
        with open(os.path.join(repo.gitdir, "gitdir"), encoding="utf-8") as f:
            back = f.read(4096).strip()
    except (OSError, ValueError):
        return False
    if not back or not os.path.isfile(dotgit):
        return False
    back = os.path.join(repo.gitdir, back)
    return os.path.realpath(back) == os.path.realpath(dotgit)


def entered(scan: RepositoryScan) -> list[Repository]:
    """The repository git run from the scan's start uses (the nearest found walking up)
    and the submodules it enters; the scan lists those further up too."""
    out: list[Repository] = []
    for repo in scan.repositories:
        if out and not repo.submodule:
            break
        out.append(repo)
    return out
