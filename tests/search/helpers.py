"""Helpers shared by the search tests and the grep/glob tool tests.

Imported as `search.helpers` (tests/ is on the path): a real tree with every case the
engines must agree on, a tree that keeps rg busy for seconds, and a way to see rg
processes this test process started.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import sysconfig
import time
from pathlib import Path

from local_tools.search.ripgrep import Ripgrep, _probe


def all_rgs() -> list[Ripgrep]:
    """Each distinct usable rg: on PATH, and the ripgrep wheel's beside this Python."""
    found: dict[str, Ripgrep] = {}
    names = ["rg.exe" if os.name == "nt" else "rg"]
    candidates = [shutil.which("rg")]
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidates += [os.path.join(folder, n) for n in names]
    for path in candidates:
        rg = _probe(path) if path else None
        if rg is not None:
            found.setdefault(os.path.realpath(rg.path), rg)
    return list(found.values())


# Unicode word boundaries over non-ASCII text keep rg off its fast paths: seconds of
# work for a few MB, so a cancel or a timeout always lands while rg is running.
SLOW_PATTERN = r"(?:\b\w+\b\W+){15}\d"


def rg_children() -> list[int]:
    """Live rg processes started by this test process (Linux /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index(b"(") + 1 : stat.rindex(b")")]
        fields = stat[stat.rindex(b")") + 2 :].split()
        if comm == b"rg" and int(fields[1]) == os.getpid() and fields[0] != b"Z":
            pids.append(int(entry))
    return pids


def wait_no_rg(timeout: float = 3.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := rg_children()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def make_slow_tree(root: Path, files: int = 2) -> Path:
    rnd = random.Random(7)
    words = [
        "".join(rnd.choice("abcdéfghij") for _ in range(rnd.randint(2, 9))) for _ in range(3000)
    ]
    root.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        lines = (" ".join(rnd.choice(words) for _ in range(12)) for _ in range(70_000))
        (root / f"slow{n}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(data)
    return path


def build_tree(root: Path, outside: Path | None = None) -> Path:
    """The equivalence tree under `root` (created); `outside` gets a symlink target."""
    root.mkdir(parents=True, exist_ok=True)
    w = lambda rel, data: write(root, rel, data)  # noqa: E731
    w(
        ".gitignore",
        "# comment\n*.log\nbuild/\n!important.log\n/top_only.txt\ndocs/**/*.tmp\n"
        "x/**\n!x/keep.txt\n\\#hash.txt\ntrailing.txt   \n*.{tmpa,tmpb}\n",
    )
    w(".ignore", "ignored_by_dot_ignore.txt\n")
    w(".rgignore", "!rg_wins.log\n")
    w(".git/config", "[core]\n\tneedle = 1\n")
    w(".git/HEAD", "ref: refs/heads/main\n")
    w(".hidden/inner.py", "def hidden_func():\n    return 'needle'\n")
    w(".config.yml", "needle: true\nTODO: hidden config\n")
    w(
        "src/main.py",
        "import os\n\n\ndef main():\n    # TODO: needle here\n    return helper()\n\n\n"
        "def helper():\n    return 'foo'\n",
    )
    w("src/util.py", "def util_needle(x):\n    return x  # needle\n\nclass UtilError(Exception):\n")
    w("src/.gitignore", "generated/\n*.pyc\n!keep.pyc\n")
    w("src/generated/gen.py", "def generated_needle():\n    pass\n")
    w("src/a.pyc", b"needle\x00\x01compiled")
    w("src/keep.pyc", b"needle but binary\x00\x02")
    w("src/sub/deep/.gitignore", "*.txt\n!wanted.txt\n")
    w("src/sub/deep/notes.txt", "needle in ignored notes\n")
    w("src/sub/deep/wanted.txt", "needle wanted\nfoo\n")
    w("src/sub/deep/x.log", "needle in a log, ignored by the root .gitignore\n")
    w("src/sub/deep/code.py", "def deep_needle():\n    return 'TODO'\n")
    w("src/sub/top_only.txt", "needle: only the root one is ignored\n")
    w("x/drop.txt", "needle dropped\n")
    w("x/keep.txt", "needle kept\n")
    w("build/out.js", "needle in build\n")
    w("app.log", "needle in app.log\n")
    w("important.log", "needle important\n")
    w("rg_wins.log", "needle: .rgignore re-includes me over .gitignore\n")
    w("ignored_by_dot_ignore.txt", "needle ignored by .ignore\n")
    w("top_only.txt", "needle top only\n")
    w("#hash.txt", "needle hash\n")
    w("trailing.txt", "needle trailing\n")
    w("brace.tmpa", "needle brace\n")
    w("docs/a/b.tmp", "needle tmp\n")
    w("docs/a/c.md", "# Docs\n\nneedle in docs\nCafé and naïve\n")
    w("crlf.txt", "foo\r\nbar foo\r\nfoo bar\r\n\r\nlast foo\r\n")
    w("bom.txt", "\ufefffoo with bom\nsecond foo\n")
    w("utf16.txt", "foo in utf16\nneedle sixteen\n".encode("utf-16"))
    w("unicode/ünïcödé.py", "# café\ndef naïve_needle():\n    return 'ÉLAN'\n")
    w("unicode/日本.txt", "日本語 needle テキスト\nCAFÉ\n")
    w("binary.bin", b"needle\x00\x00binary data needle\n")
    w("late_nul.txt", "needle before\n" + "x" * 100 + "\n\x00after needle\n")
    w("long.txt", "start " + "y" * 2990 + " needle end\nshort needle\n")
    w("empty.txt", "")
    w("no_newline.txt", "foo at the end without newline")
    w("blank_lines.txt", "a\n\n\nb\n")
    w("invalid_utf8.txt", b"needle \xff\xfe bytes\n")
    # Literal-first patterns, searched whole (ASCII, UTF-8, and past the window size).
    w(
        "src/errors.py",
        "class FooError(Exception):\nclass BarERROR:\nCLASS BazError\n"
        "class x_error: pass; class y_error: pass\nclass NotAnErrorish:\n"
        "def test_one(): def test_two()\ndef test_last",
    )
    w(
        "unicode/errors.py",
        "# ünïcode\nclass ÉtéError(Exception):\nclaſs LongSError:\nclass \u212aelvinError:\n"
        "KELVIN \u212aelvin kelvin\ndef test_été(): pass\n",
    )
    w(
        "big/huge.txt",
        "filler line\n" * 30_000 + "class HugeError: def test_deep()\nnaïve end\n",
    )
    w("src/ranges.txt", "fooa\nfooA\nfoo1\nfoo?\nfoo_\nFOO[\n")
    # Binary by its first 64 KB: skipped unread, however many matches follow.
    w("big/lib.so", b"\x7fELF\x00" + b"x" * 70_000 + b"\nneedle def test_so\n" * 3)
    for i in range(150):
        lines = [f"line {j} needle {i}" if j % 3 == 0 else f"line {j} other" for j in range(7)]
        w(f"many/f{i:03}.py", "\n".join(lines) + "\n")
    (root / "empty_dir").mkdir(exist_ok=True)
    if hasattr(os, "symlink"):
        try:
            (root / "link_file.py").symlink_to(root / "src" / "main.py")
            (root / "link_dir").symlink_to(root / "src", target_is_directory=True)
            if outside is not None:
                outside.mkdir(parents=True, exist_ok=True)
                write(outside, "secret.py", "needle outside the jail\n")
                (root / "escape").symlink_to(outside, target_is_directory=True)
        except OSError:
            pass
    # Distinct mtimes: the newest-first order is then the same on every machine.
    for n, path in enumerate(sorted(p for p in root.rglob("*") if not p.is_symlink())):
        os.utime(path, (1_600_000_000 + n * 7, 1_600_000_000 + n * 7))
    return root
