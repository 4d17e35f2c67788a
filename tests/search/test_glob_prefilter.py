"""PathGlob.select's literal prefilter keeps exactly the paths `matches` accepts.

Patterns the regex may not take (two `**` and more) go through the per-path automaton;
a substring test on the literal runs comes first. Real files, listed by real rg.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from local_tools.search.glob_match import PathGlob
from local_tools.search.ripgrep import RgEngine, Ripgrep
from local_tools.search.scope import scope_in

PATTERNS = [
    "**/tests/**/*.py",
    "**/tests/**/test_*.py",
    "src/**/tests/**/*.py",
    "**/a*b/**/c*d/**/*.txt",
    "**/tests/**/*.{py,txt}",
    "**/t[e]sts/**/*.py",
    "**/tésts/**/*.py",
    "**/ünï/**/*",
    "**/tests/**/*.py,!**/skip/**",
    "!**/tests/**/*.py",
    "**/*.py",
    "/src/**/x/**/*.py",
]

NAMES = [
    "src/pkg/tests/test_a.py",
    "src/pkg/tests/deep/more/test_b.py",
    "src/pkg/tests/data.txt",
    "src/pkg/notests/x.py",
    "src/pkg/tests.py",
    "src/tests",
    "lib/tests/skip/test_c.py",
    "lib/tésts/sub/x.py",
    "lib/ünï/tests/ü.py",
    "a1b/q/c2d/r/f.txt",
    "ab/cd/f.txt",
    "tests/x/y/z.py",
    "src/x/tests/x/k.py",
    "TESTS/x/a.py",
]


@pytest.fixture
def listed(tmp_path: Path, rg: Ripgrep) -> list[str]:
    for name in NAMES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("x\n")
    if os.name != "nt" and os.uname().sysname == "Linux":
        odd = os.fsencode(tmp_path / "src" / "tests") + b"/caf\xe9tests\xff.py"
        try:
            with open(odd, "wb") as f:
                f.write(b"x\n")
        except OSError:
            pass
    return list(RgEngine(rg).files(scope_in(tmp_path)))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_select_agrees_with_matches(listed: list[str], pattern: str) -> None:
    glob = PathGlob(pattern)
    assert glob.select(list(listed)) == [p for p in listed if glob.matches(p)]
    below = ["sub/" + p for p in listed]
    assert glob.select(below, 4) == [p for p in below if glob.matches(p[4:])]


def test_the_prefilter_is_used_and_finds_files(listed: list[str]) -> None:
    glob = PathGlob("**/tests/**/*.py")
    assert glob._globs[0].literals == ("tests", ".py")
    found = set(glob.select(list(listed)))
    assert "src/pkg/tests/deep/more/test_b.py" in found and "src/pkg/tests.py" not in found
