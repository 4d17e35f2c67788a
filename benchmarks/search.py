"""grep and glob tools against raw ripgrep and the pure-Python fallback, on real corpora.

    python benchmarks/corpus.py [--large]          # once: builds the corpora
    python benchmarks/search.py [--large] [--rounds 11] [--no-big-tree]

Trees: `everyday` (django's tests, a folder of the small corpus: a project checkout's
size), `small`, `large` (with --large) and `tree100k` (100,000 generated files, made
once under the cache; the costs users feel on a big checkout; no fallback there).

For each corpus and query, every variant runs once to warm up (its output is the one
checked), then all variants run interleaved for N rounds, their order rotated each
round so drift and cache state hit all alike. The table gives medians of wall time
(perf_counter) and CPU time, and ratios against raw rg on the same query:
- subprocess variants (raw rg): the child's CPU, from RUSAGE_CHILDREN deltas;
- in-process variants (the tool, the fallback): time.process_time (every thread of
  this process) plus RUSAGE_CHILDREN deltas, since the tool spawns rg.

"tool, two passes" is the same tool with the one-pass plan switched off (what grep
did before it): the plans side by side in one run.

Every variant's result set ({(path, line)} for grep, {path} for glob) is compared with
raw rg's; any mismatch is printed and the script exits 1. Raw rg gets the same
ignore-related flags the tool passes (see `engine_rg_flags`), so all engines search
the same tree. Output is Markdown, ready for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from corpus import (
    BIG_TREE,
    CORPORA,
    EVERYDAY,
    default_cache,
    everyday_root,
    format_manifest,
    make_big_tree,
    read_marker,
)
from machine import describe

TOOL_CAP = 100  # grep matches / glob files a tool call returns at most (TOOLS.md)

Hit = tuple[str, int]  # (posix path relative to the corpus root, 1-based line)


@dataclass(frozen=True)
class GrepQuery:
    label: str
    pattern: str
    ignore_case: bool = False


@dataclass(frozen=True)
class GlobQuery:
    label: str
    pattern: str


GREP_QUERIES = (
    GrepQuery("few hits", r"def \w+_handler"),
    GrepQuery("many hits", r"def test_\w+"),
    GrepQuery("no hits", r"qzxv_no_such_token_\d{3}"),
    GrepQuery("ignore case", r"class \w+error\b", ignore_case=True),
)
GLOB_QUERIES = (
    GlobQuery("all .py", "**/*.py"),
    GlobQuery("tests .py", "**/tests/**/*.py"),
)
# The generated tree: a token in 21 files, `def test_` in most, nothing; globs by name.
BIG_GREP_QUERIES = (
    GrepQuery("few hits", r"RARE_TOKEN_\d+"),
    GrepQuery("many hits", r"def test_\w+"),
    GrepQuery("no hits", r"qzxv_no_such_token_\d{3}"),
)
BIG_GLOB_QUERIES = (
    GlobQuery("all .py", "**/*.py"),
    GlobQuery("all .md", "**/*.md"),
)


# -- engine adapter -------------------------------------------------------------------
# Everything the harness takes from local_tools.search (imported late: the engine reads
# LOCAL_TOOLS_RG and LOCAL_TOOLS_SEARCH_ENGINE, which main() sets first).


def engine_rg_path() -> str | None:
    """The rg the tools run: $LOCAL_TOOLS_RG, else PATH, else beside this interpreter."""
    from local_tools.search import rg_path

    return rg_path()


def engine_rg_flags() -> list[str]:
    """The flags the tools pass rg that decide which files are searched (.gitignore
    also outside git, hidden files kept, .git skipped); raw rg gets the same."""
    from local_tools.search import rg_walk_flags

    return rg_walk_flags()


def fallback_grep(root: Path, query: GrepQuery) -> list[Hit]:
    """The pure-Python grep engine, uncapped. A list: the set for the check is built
    outside the timing, as raw rg's output is parsed outside it."""
    from local_tools.search import fallback_grep as grep

    return list(grep(root, query.pattern, ignore_case=query.ignore_case))


def fallback_glob(root: Path, pattern: str) -> list[str]:
    """The scandir glob engine, uncapped (a list, like fallback_grep)."""
    from local_tools.search import fallback_glob as glob

    return list(glob(root, pattern))


def describe_list_diff(name: str, got: list[Any], want: set[Any]) -> str:
    """describe_diff for a list, which must also hold no result twice."""
    unique = set(got)
    if len(unique) != len(got):
        return f"{name}: {len(got) - len(unique)} results listed twice"
    return describe_diff(name, unique, want)


@contextlib.contextmanager
def two_passes() -> Iterator[None]:
    """grep's one-pass plan switched off: it counts first, then reads the newest lines."""
    from local_tools.search import results

    single = results.grep_single_pass
    results.grep_single_pass = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        results.grep_single_pass = single


@contextlib.contextmanager
def python_engine() -> Iterator[None]:
    """The tools forced onto the pure-Python engine (read on every call)."""
    from local_tools.search import ENGINE_ENV

    old = os.environ.get(ENGINE_ENV)
    os.environ[ENGINE_ENV] = "python"
    try:
        yield
    finally:
        if old is None:
            del os.environ[ENGINE_ENV]
        else:
            os.environ[ENGINE_ENV] = old


# -- measuring ------------------------------------------------------------------------


@dataclass
class Sample:
    wall: float
    cpu: float
    child_cpu: float


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure(fn: Callable[[], Any], in_process: bool) -> tuple[Sample, Any]:
    c0 = children_cpu()
    p0 = time.process_time()
    t0 = time.perf_counter()
    out = fn()
    t1 = time.perf_counter()
    p1 = time.process_time()
    c1 = children_cpu()
    child = c1 - c0
    return Sample(t1 - t0, (p1 - p0 if in_process else 0.0) + child, child), out


@dataclass
class Variant:
    name: str
    run: Callable[[], Any]
    # Turns the warm-up output into a verdict against the reference: "" when it
    # matches, else what differs. None for the reference itself.
    check: Callable[[Any], str] | None
    count: Callable[[Any], int]
    in_process: bool
    spawns_rg: bool = False  # the tool: flagged in the table if it never ran a child
    samples: list[Sample] = field(default_factory=list)
    verdict: str = ""
    results: int = 0


def run_rg(rg: str, args: Sequence[str], root: Path) -> bytes:
    proc = subprocess.run([rg, *args], cwd=root, capture_output=True, check=False)
    if proc.returncode not in (0, 1):  # 1: nothing matched
        raise RuntimeError(f"rg {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout


def strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def parse_rg_grep(out: bytes) -> set[Hit]:
    hits: set[Hit] = set()
    for line in out.split(b"\n"):
        if not line:
            continue
        path, _, rest = line.partition(b"\0")
        number = rest.split(b":", 1)[0]
        hits.add((strip_dot(os.fsdecode(path)), int(number)))
    return hits


def parse_rg_files(out: bytes) -> set[str]:
    return {strip_dot(os.fsdecode(p)) for p in out.split(b"\0") if p}


def describe_diff(name: str, got: set[Any], want: set[Any]) -> str:
    missing, extra = sorted(want - got), sorted(got - want)
    if not missing and not extra:
        return ""
    parts = [f"{name}: {len(got)} results, rg {len(want)}"]
    if missing:
        parts.append(f"missing {len(missing)}, e.g. {missing[:3]}")
    if extra:
        parts.append(f"extra {len(extra)}, e.g. {extra[:3]}")
    return "; ".join(parts)


NOT_AVAILABLE = "n/a"


def tool_failure(env: dict[str, Any]) -> str | None:
    if env.get("success"):
        return None
    err = env.get("error") or {}
    if err.get("error_code") == "UNKNOWN_TOOL":
        return NOT_AVAILABLE
    return f"{err.get('error_code')}: {err.get('message')}"


def newest_first(root: Path) -> Callable[[str], tuple[int, str]]:
    """The tools' order: newest mtime first, ties by path (a heap over (-mtime, path))."""

    def key(path: str) -> tuple[int, str]:
        return -os.lstat(root / path).st_mtime_ns, path

    return key


def order_problem(got: Sequence[object], expected: Sequence[object]) -> str:
    first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
    at = f"first difference at #{first}" if first is not None else "lengths differ"
    return f"not rg's first {len(expected)} sorted newest first ({len(got)} returned, {at})"


def check_tool_grep(env: dict[str, Any], want: set[Hit], root: Path) -> str:
    """The capped tool output against rg's full set, sorted the tools' way.

    The tools show files newest first, lines in order inside a file, up to 100 matches:
    that is exactly the first 100 of rg's hits sorted by (newest file, path, line).
    """
    failure = tool_failure(env)
    if failure:
        return failure if failure == NOT_AVAILABLE else f"tool failed: {failure}"
    out = env["output"]
    got = [(strip_dot(m["path"]), int(m["line"])) for m in out["matches"] if not m.get("context")]
    problems = []
    if out.get("total") != len(want):
        problems.append(f"total {out.get('total')} != rg {len(want)}")
    if bool(out.get("truncated")) != (len(want) > TOOL_CAP):
        problems.append(f"truncated={out.get('truncated')} with {len(want)} matches")
    stray = [hit for hit in got if hit not in want]
    if stray:
        problems.append(f"{len(stray)} not in rg's output, e.g. {stray[:3]}")
    file_key = newest_first(root)
    expected = sorted(want, key=lambda hit: (*file_key(hit[0]), hit[1]))[:TOOL_CAP]
    if not stray and got != expected:
        problems.append(order_problem(got, expected))
    return "; ".join(problems)


def check_tool_glob(env: dict[str, Any], want: set[str], root: Path) -> str:
    """The capped tool output against rg's files sorted newest first (ties by path)."""
    failure = tool_failure(env)
    if failure:
        return failure if failure == NOT_AVAILABLE else f"tool failed: {failure}"
    out = env["output"]
    got = [strip_dot(p) for p in out["files"]]
    problems = []
    if "total" in out and out["total"] != len(want):
        problems.append(f"total {out['total']} != rg {len(want)}")
    if bool(out.get("truncated")) != (len(want) > TOOL_CAP):
        problems.append(f"truncated={out.get('truncated')} with {len(want)} files")
    stray = [p for p in got if p not in want]
    if stray:
        problems.append(f"{len(stray)} not in rg's output, e.g. {stray[:3]}")
    expected = sorted(want, key=newest_first(root))[:TOOL_CAP]
    if not stray and got != expected:
        problems.append(order_problem(got, expected))
    return "; ".join(problems)


# -- variants -------------------------------------------------------------------------


def tool_count(env: Any) -> int:
    if not isinstance(env, dict) or not env.get("success"):
        return 0
    out = env["output"]
    return int(out.get("total", len(out.get("files", out.get("matches", [])))))


def in_python_engine(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with python_engine():
            return fn()

    return run


def grep_variants(
    rg: str, root: Path, toolbox: Any, q: GrepQuery, tool_python: bool, fallback: bool = True
) -> list[Variant]:
    base = ["--no-config", "--null", "-n", *engine_rg_flags()]
    base += ["-i"] if q.ignore_case else []
    base += ["-e", q.pattern, "."]
    want: set[Hit] = set()

    def reference(out: bytes) -> str:
        want.update(parse_rg_grep(out))
        return ""

    args: dict[str, Any] = {"pattern": q.pattern, "path": "."}
    if q.ignore_case:
        args["ignore_case"] = True

    def tool() -> Any:
        return toolbox.run("grep", args)

    def tool_two_passes() -> Any:
        with two_passes():
            return toolbox.run("grep", args)

    variants = [
        Variant("rg", lambda: run_rg(rg, base, root), reference, lambda o: len(want), False),
        Variant(
            "rg -j1",
            lambda: run_rg(rg, ["-j1", *base], root),
            lambda o: describe_diff("rg -j1", parse_rg_grep(o), want),
            lambda o: len(parse_rg_grep(o)),
            False,
        ),
        Variant(
            "tool (Python API)",
            tool,
            lambda env: check_tool_grep(env, want, root),
            tool_count,
            True,
            spawns_rg=True,
        ),
        Variant(
            "tool, two passes (before)",
            tool_two_passes,
            lambda env: check_tool_grep(env, want, root),
            tool_count,
            True,
            spawns_rg=True,
        ),
    ]
    if fallback:
        variants.append(
            Variant(
                "fallback (pure Python)",
                lambda: fallback_grep(root, q),
                lambda hits: describe_list_diff("fallback", hits, want),
                len,
                True,
            )
        )
    if tool_python:
        variants.append(
            Variant(
                "tool, Python engine",
                in_python_engine(tool),
                lambda env: check_tool_grep(env, want, root),
                tool_count,
                True,
            )
        )
    return variants


def glob_variants(
    rg: str, root: Path, toolbox: Any, q: GlobQuery, tool_python: bool, fallback: bool = True
) -> list[Variant]:
    base = ["--no-config", "--files", "--null", *engine_rg_flags(), "--glob", q.pattern]
    want: set[str] = set()

    def reference(out: bytes) -> str:
        want.update(parse_rg_files(out))
        return ""

    def tool() -> Any:
        return toolbox.run("glob", {"pattern": q.pattern, "path": "."})

    def count(env: Any) -> int:
        return tool_count(env) if tool_failure(env) is None else 0

    variants = [
        Variant(
            "rg --files -g", lambda: run_rg(rg, base, root), reference, lambda o: len(want), False
        ),
        Variant(
            "tool (Python API)",
            tool,
            lambda env: check_tool_glob(env, want, root),
            count,
            True,
            spawns_rg=True,
        ),
    ]
    if fallback:
        variants.append(
            Variant(
                "fallback (scandir)",
                lambda: fallback_glob(root, q.pattern),
                lambda files: describe_list_diff("fallback", files, want),
                len,
                True,
            )
        )
    if tool_python:
        variants.append(
            Variant(
                "tool, Python engine",
                in_python_engine(tool),
                lambda env: check_tool_glob(env, want, root),
                count,
                True,
            )
        )
    return variants


def bench(variants: list[Variant], rounds: int) -> None:
    # Warm-up, whose outputs are checked; the reference (index 0) runs first.
    for v in variants:
        gc.collect()
        _, out = measure(v.run, v.in_process)
        v.verdict = v.check(out) if v.check else ""
        v.results = v.count(out)
    runnable = [v for v in variants if not v.verdict.startswith(("tool failed", NOT_AVAILABLE))]
    for r in range(rounds):
        for i in range(len(runnable)):
            v = runnable[(r + i) % len(runnable)]
            gc.collect()
            sample, _ = measure(v.run, v.in_process)
            v.samples.append(sample)


# -- report ---------------------------------------------------------------------------


def med(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def fmt_ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def print_table(query: str, variants: list[Variant]) -> None:
    ref = variants[0]
    ref_wall = med(s.wall for s in ref.samples)
    ref_cpu = med(s.cpu for s in ref.samples)
    for v in variants:
        if not v.samples:
            print(f"| {query} | {v.name} | — | — | — | — | — | {v.verdict or 'n/a'} |")
            continue
        wall = med(s.wall for s in v.samples)
        cpu = med(s.cpu for s in v.samples)
        spawned = any(s.child_cpu > 0 for s in v.samples)
        note = " (ran no rg: fallback?)" if v.spawns_rg and not spawned else ""
        check = "reference" if v is ref else ("ok" if not v.verdict else "MISMATCH")
        print(
            f"| {query} | {v.name}{note} | {wall * 1e3:,.1f} | {fmt_ratio(wall / ref_wall)} "
            f"| {cpu * 1e3:,.1f} | {fmt_ratio(cpu / ref_cpu if ref_cpu else None)} "
            f"| {v.results:,} | {check} |"
        )


def ratio(variants: list[Variant], name: str, metric: str) -> float | None:
    by_name = {v.name: v for v in variants}
    v, ref = by_name.get(name), variants[0]
    if v is None or not v.samples or not ref.samples:
        return None
    num = med(getattr(s, metric) for s in v.samples)
    den = med(getattr(s, metric) for s in ref.samples)
    return num / den if den else None


@dataclass
class Target:
    what: str
    measured: float | None
    limit: float

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "not measured"
        return "met" if self.measured <= self.limit else "MISSED"


def targets_for(
    corpus: str, grep: dict[str, list[Variant]], glob: dict[str, list[Variant]]
) -> list[Target]:
    out: list[Target] = []
    if "few hits" in grep:
        out.append(
            Target(
                f"{corpus}: grep tool / rg wall, few hits",
                ratio(grep["few hits"], "tool (Python API)", "wall"),
                1.10,
            )
        )
    if "many hits" in grep:
        out.append(
            Target(
                f"{corpus}: grep tool / rg wall, many hits",
                ratio(grep["many hits"], "tool (Python API)", "wall"),
                1.30,
            )
        )
    for label, variants in glob.items():
        out.append(
            Target(
                f"{corpus}: glob tool / rg --files wall, {label}",
                ratio(variants, "tool (Python API)", "wall"),
                1.25,
            )
        )
    for label, variants in grep.items():
        if any(v.name == "fallback (pure Python)" for v in variants):
            out.append(
                Target(
                    f"{corpus}: grep fallback / rg CPU, {label}",
                    ratio(variants, "fallback (pure Python)", "cpu"),
                    1.70,
                )
            )
    return out


# -- main -----------------------------------------------------------------------------


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def rg_version(rg: str) -> str:
    out = subprocess.run([rg, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


def tools_to_add() -> list[Any]:
    """grep and glob when builtin_tools() does not list them yet (passed as tools=)."""
    from local_tools.tools import builtin_tools

    names = {t.name for t in builtin_tools()}
    return [
        getattr(importlib.import_module(f"local_tools.tools.{name}"), name)
        for name in ("grep", "glob")
        if name not in names
    ]


def choose_rg(requested: str | None, cache: Path) -> str:
    """The rg everything runs: --rg, else the tools' own, else the cached pinned one.

    The choice goes to the tools through $LOCAL_TOOLS_RG, and is checked against what
    the engine then reports, so raw rg and the tool always run the same binary.
    """
    from local_tools.search.ripgrep import RG_ENV

    cached = cache / "bin" / ("rg.exe" if os.name == "nt" else "rg")
    if requested:
        os.environ[RG_ENV] = shutil.which(requested) or os.path.abspath(requested)
    elif engine_rg_path() is None and cached.is_file():
        os.environ[RG_ENV] = str(cached)
    rg = engine_rg_path()
    if rg is None:
        raise SystemExit(
            "the tools find no usable rg (13+): run benchmarks/corpus.py (it fetches one) "
            "or pass --rg"
        )
    if requested and os.path.realpath(rg) != os.path.realpath(os.environ[RG_ENV]):
        raise SystemExit(f"the tools would run {rg}, not {requested}")
    return rg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help="run the large corpus too")
    parser.add_argument("--only-large", action="store_true", help="run the large corpus only")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument(
        "--trees", help="comma-separated: run only these (everyday, small, large, tree100k)"
    )
    parser.add_argument(
        "--no-big-tree",
        dest="big_tree",
        action="store_false",
        help="leave out the 100,000-file tree (made once under the cache, ~20 s)",
    )
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument(
        "--rg", help="the rg to use (default: the one the tools find, else CACHE/bin/rg)"
    )
    parser.add_argument("--only", choices=("grep", "glob"), help="run one tool only")
    parser.add_argument(
        "--tool-python",
        action="store_true",
        help="add the tools forced onto the pure-Python engine (what users without rg get)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 2 when a target is missed (1 is a mismatch)"
    )
    opts = parser.parse_args()

    cache: Path = opts.cache.expanduser()
    rg = choose_rg(opts.rg, cache)
    from local_tools import Toolbox

    corpora = ["large"] if opts.only_large else list(CORPORA if opts.large else CORPORA[:1])
    roots: dict[str, tuple[Path, str]] = {}
    for corpus in corpora:
        marker = read_marker(cache, corpus)
        if marker is None:
            flag = " --large" if corpus == "large" else ""
            raise SystemExit(f"no {corpus} corpus in {cache}: run benchmarks/corpus.py{flag}")
        if corpus == "small" and not opts.only_large:
            everyday = everyday_root(cache)
            if everyday is not None:
                files = sum(1 for p in everyday.rglob("*") if not p.is_dir())
                roots["everyday"] = (everyday, f"everyday: {EVERYDAY[1]} of small, {files} files")
        roots[corpus] = (
            cache / corpus,
            format_manifest(corpus, cache / corpus, marker["manifest"]),
        )
    if opts.big_tree and not opts.only_large:
        big_root = make_big_tree(cache)
        roots[BIG_TREE] = (
            big_root,
            f"{BIG_TREE}: 100,000 generated files (corpus.py make_big_tree)",
        )

    if opts.trees:
        roots = {name: roots[name] for name in opts.trees.split(",") if name in roots}
    print("# Search tools: grep and glob against raw rg")
    print()
    print(f"- machine: {describe()}")
    print(f"- rg: {rg_version(rg)} ({rg}), the one the tools run")
    print(f"- walk flags (the tools', given to raw rg too): `{' '.join(engine_rg_flags())}`")
    for corpus, (root, about) in roots.items():
        print(
            f"- tree {about}  [{root}]" if corpus in ("everyday", BIG_TREE) else f"- corpus {about}"
        )
    print(f"- {opts.rounds} rounds, interleaved (order rotated each round), medians")
    print(f"- load average at start: {load()}")
    extra_tools = tools_to_add()
    if extra_tools:
        names = ", ".join(t.name for t in extra_tools)
        print(f"- not built in yet, so passed as Toolbox(tools=...): {names}")

    mismatches: list[str] = []
    targets: list[Target] = []
    state = Path(tempfile.mkdtemp(prefix="lt-bench-search-"))
    try:
        for corpus, (root, _) in roots.items():
            toolbox = Toolbox(
                root, state_dir=state / corpus, audit=False, plugins=False, tools=extra_tools
            )
            grep_runs: dict[str, list[Variant]] = {}
            glob_runs: dict[str, list[Variant]] = {}
            print()
            print(f"## {corpus} corpus")
            print()
            print("| query | variant | wall ms | × rg | CPU ms | × rg CPU | results | check |")
            print("|---|---|--:|--:|--:|--:|--:|---|")
            big = corpus == BIG_TREE
            if opts.only != "glob":
                for gq in BIG_GREP_QUERIES if big else GREP_QUERIES:
                    variants = grep_variants(rg, root, toolbox, gq, opts.tool_python, not big)
                    bench(variants, opts.rounds)
                    grep_runs[gq.label] = variants
                    flag = " -i" if gq.ignore_case else ""
                    print_table(f"grep {gq.label}: `{gq.pattern}`{flag}", variants)
                    mismatches += [
                        f"{corpus} grep {gq.label}: {v.name}: {v.verdict}"
                        for v in variants
                        if v.verdict and v.verdict != NOT_AVAILABLE
                    ]
                    sys.stdout.flush()
            if opts.only != "grep":
                for lq in BIG_GLOB_QUERIES if big else GLOB_QUERIES:
                    variants = glob_variants(rg, root, toolbox, lq, opts.tool_python, not big)
                    bench(variants, opts.rounds)
                    glob_runs[lq.label] = variants
                    print_table(f"glob `{lq.pattern}`", variants)
                    mismatches += [
                        f"{corpus} glob {lq.label}: {v.name}: {v.verdict}"
                        for v in variants
                        if v.verdict and v.verdict != NOT_AVAILABLE
                    ]
                    sys.stdout.flush()
            toolbox.close()
            targets += targets_for(corpus, grep_runs, glob_runs)
    finally:
        shutil.rmtree(state, ignore_errors=True)

    print()
    print(f"Load average at the end: {load()} (other work on the machine skews wall times).")
    print()
    print("## Targets (ratios of medians from this run)")
    print()
    print("| target | measured | limit | verdict |")
    print("|---|--:|--:|---|")
    for t in targets:
        measured = "—" if t.measured is None else f"{t.measured:.3f}×"
        print(f"| {t.what} | {measured} | ≤ {t.limit:.2f}× | {t.verdict} |")
    if mismatches:
        print()
        print("## Result-set mismatches against raw rg")
        print()
        for m in mismatches:
            print(f"- {m}")
        raise SystemExit(1)
    if opts.strict and any(t.verdict != "met" for t in targets):
        raise SystemExit(2)


if __name__ == "__main__":
    main()
