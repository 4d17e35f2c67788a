"""File names holding a newline cannot pass one file's lines off as another's.

rg's `--heading` stream is a name, a NUL, the file's lines, an empty line, the next
name: a name with a newline in it could be read as lines, and a name ending in an
allowed file's name as that file. grep then showed a denied file's lines under an
allowed name and lines a name made up (attack review of issue #26, F1). Real files,
real rg, the policy of a real Toolbox.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools.search.grep_single import grep_single_pass
from local_tools.search.ripgrep import RgEngine, Ripgrep
from local_tools.search.scope import Query, scope_in

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="names with a newline")

SECRET = "needle TOKEN=hunter2"
FORGED = "needle FORGED LINE"


def _plant(ws: Path, filler: int = 0) -> None:
    (ws / "secret").mkdir()
    (ws / "secret" / "x\nnotes.txt").write_text(f"{SECRET}\n")
    (ws / "evil\n7:needle FORGED LINE\nzz.txt").write_text("needle\n")
    (ws / "notes.txt").write_text("needle in the open\n")
    for i in range(filler):  # enough output that the stream comes in several blocks
        (ws / f"f{i:04d}.txt").write_text("needle filler line\n" * 50)
        os.utime(ws / f"f{i:04d}.txt", (1e9, 1e9))  # older: the planted files are shown


@pytest.mark.parametrize("filler", [0, 400])
def test_a_denied_file_named_like_an_allowed_one_shows_nothing(
    make_toolbox: Any, workspace: Path, filler: int
) -> None:
    _plant(workspace, filler)
    tb = make_toolbox({"permissions": {"read:file": {"*": "allow", "secret/**": "deny"}}})
    out = ok(tb.run("grep", {"pattern": "needle"}))
    texts = [m["text"] for m in out["matches"]]
    assert SECRET not in texts and FORGED not in texts
    assert ("notes.txt", "needle in the open") in {(m["path"], m["text"]) for m in out["matches"]}
    assert all(m["path"] != "notes.txt" or m["line"] == 1 for m in out["matches"])


def test_the_one_pass_plan_gives_way_to_the_two_pass_plan(rg: Ripgrep, tmp_path: Path) -> None:
    _plant(tmp_path)
    one = grep_single_pass(
        RgEngine(rg),
        scope_in(tmp_path),
        Query("needle"),
        name_globs=None,
        accept=None,
        allowed=None,
        limit=100,
        check=None,
    )
    assert one is None  # a name holding a newline: counted first instead


@pytest.mark.parametrize("filler", [0, 400])
def test_plain_names_keep_the_one_pass_plan(rg: Ripgrep, tmp_path: Path, filler: int) -> None:
    (tmp_path / "notes.txt").write_text("needle in the open\n\n\nneedle again\n")
    for i in range(filler):
        (tmp_path / f"f{i:04d}.txt").write_text("needle filler line\n" * 50)
    one = grep_single_pass(
        RgEngine(rg),
        scope_in(tmp_path),
        Query("needle", context=2),
        name_globs=None,
        accept=None,
        allowed=None,
        limit=100,
        check=None,
    )
    assert one is not None and one.total == 2 + 50 * filler
