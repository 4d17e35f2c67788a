"""What a model is handed: every tool's size per door and format, and each profile's total.

Sizes are what lands in the model's context, in characters and in tokens of OpenAI's
cl100k encoding (the common yardstick; `bpe-openai` bundles it, so nothing is downloaded):

- MCP: a tools/list entry as a client passes it to the model, `{"name", "description",
  "inputSchema"}` as JSON (tests/transports/test_listing_budgets.py measures the same);
- OpenAI, OpenAI strict, Anthropic: the whole declaration each converter in
  `transports/schemas.py` gives, as JSON;
- `/prompt`: openlink's system prompt (`GET /prompt`) for the profile, whole; per tool,
  its `### name` section.

A profile's total for the JSON formats is the sum of its tools'. Beside them, in the same
run: the MCP reference filesystem server's listing (npm
`@modelcontextprotocol/server-filesystem` from tests/interop, `make test` installs it) and
our own `serve mcp` listing, both read over stdio by the Python SDK's client; ours must
equal the in-process figure. Then the budgets of issue #21, met or not.

    python benchmarks/listing.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any

from local_tools import Toolbox
from local_tools.core.profiles import BUILTIN_PROFILES, DEFAULT_PROFILE
from local_tools.core.tool import Tool
from local_tools.transports.openlink import prompt_text
from local_tools.transports.schemas import to_anthropic, to_mcp, to_openai, to_openai_strict
from machine import describe

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests/interop/node_modules/.bin/mcp-server-filesystem"
REFERENCE_PACKAGE = ROOT / "tests/interop/node_modules/@modelcontextprotocol/server-filesystem"
PROFILES = tuple(BUILTIN_PROFILES)  # core, full, then one per toolset family
JSON_FORMATS = ("MCP", "OpenAI", "OpenAI strict", "Anthropic")
PROMPT = "/prompt"

# Issue #21's budgets, and the figures it started from.
MAX_DESCRIPTION = 1_024  # OpenAI's cap on a function description
MAX_DEFAULT_MCP = 24_000
# 60,000 (#21) plus the three checkpoint tools (#24), plus task and compact (#25)
MAX_ALL_MCP = 65_000
# task and compact are listed only once a model is configured: one is (never called).
WITH_MODEL = {"models": {"local": {"model": "m", "base_url": "http://127.0.0.1:11434/v1"}}}
MAX_DEFAULT_PROMPT = 12_130  # openlink's own /prompt
BEFORE_ALL_MCP = 69_150
BEFORE_PROMPT = 51_405  # /prompt, every tool listed
BEFORE_REFERENCE = 8_299


def mcp_entry(decl: dict[str, Any]) -> str:
    """A tools/list entry as a client hands it to the model."""
    return json.dumps(
        {
            "name": decl["name"],
            "description": decl["description"],
            "inputSchema": decl["inputSchema"],
        }
    )


CONVERTERS: dict[str, Callable[[Tool], str]] = {
    "MCP": lambda t: mcp_entry(to_mcp(t)),
    "OpenAI": lambda t: json.dumps(to_openai(t)),
    "OpenAI strict": lambda t: json.dumps(to_openai_strict(t)),
    "Anthropic": lambda t: json.dumps(to_anthropic(t)),
}


class Counter:
    """Characters and cl100k tokens of a text."""

    def __init__(self) -> None:
        import bpe_openai

        self.encoding = bpe_openai.get_encoding("cl100k_base")

    def __call__(self, text: str) -> tuple[int, int]:
        # Text that looks like a special token is counted as text, as an API would see it.
        return len(text), len(self.encoding.encode(text, disallowed_special=()))


def prompt_sections(text: str) -> dict[str, str]:
    """Each tool's `### name` section of a /prompt text."""
    block = text.split("## Tools\n\n", 1)[-1].split("\n## ", 1)[0]
    sections: dict[str, str] = {}
    for chunk in block.strip().split("\n\n"):
        if chunk.startswith("### "):
            sections[chunk.split("\n", 1)[0][4:].strip()] = chunk
    return sections


# -- listings over stdio ---------------------------------------------------------


async def served_listing(argv: list[str], env: dict[str, str], errlog: Any) -> list[str]:
    """The tools/list entries of a stdio server, every page, as the model sees them."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    entries: list[str] = []
    async with Client(stdio_client(params, errlog=errlog), cache=None) as c:
        cursor = None
        while True:
            page = await c.list_tools(cursor=cursor)
            entries += [
                json.dumps(
                    {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                )
                for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                return entries


async def served(ws: Path, env: dict[str, str], errlog: Any) -> dict[str, list[str] | str]:
    """The reference server's listing and ours (default and full profile), side by side;
    a listing that could not be read is the reason why, as text."""
    ours = [sys.executable, "-m", "local_tools", "serve", "mcp", "--workspace", str(ws)]
    argvs = {
        "reference": [str(REFERENCE), str(ws)],
        DEFAULT_PROFILE: ours,
        "full": [*ours, "--profile", "full"],
    }

    async def one(name: str, argv: list[str]) -> list[str] | str:
        if name == "reference" and not REFERENCE.exists():
            return f"{REFERENCE} missing: run `make test` or `cd tests/interop && npm ci`"
        if name == "reference" and shutil.which("node") is None:
            return "node is not on PATH"
        try:
            return await asyncio.wait_for(served_listing(argv, env, errlog), 60)
        except Exception as exc:  # reported in the table: the rest still measures
            return f"{type(exc).__name__}: {exc}"

    results = await asyncio.gather(*(one(n, a) for n, a in argvs.items()))
    return dict(zip(argvs, results, strict=True))


# -- printing ----------------------------------------------------------------------


def num(n: int) -> str:
    return f"{n:,}"


def table(header: Iterable[str], rows: Iterable[Iterable[object]], text: int = 1) -> None:
    """A Markdown table; the first `text` columns and the last one (when it says which
    profiles, or OK/OVER) hold words, the others numbers."""
    header = list(header)
    aligns = ["---" if i < text else "--:" for i in range(len(header))]
    if header[-1] in ("listed by", ""):
        aligns[-1] = "---"
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(aligns) + "|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print()


def reference_version() -> str:
    try:
        meta = json.loads((REFERENCE_PACKAGE / "package.json").read_text(encoding="utf-8"))
        return str(meta.get("version", "?"))
    except (OSError, ValueError):
        return "?"


def main() -> None:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lt-listing-bench-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        # The SDK hands a child only a few variables; the servers' state (audit) goes to tmp.
        env = {"LOCAL_TOOLS_STATE_DIR": str(Path(tmp) / "served-state")}
        with open(os.devnull, "w") as errlog, ThreadPoolExecutor(1) as pool:
            # The servers start (~1 s each) while this process measures in-process.
            stdio = pool.submit(asyncio.run, served(ws, env, errlog))
            count = Counter()
            state = Path(tmp) / "state"
            boxes = {
                p: Toolbox(ws, WITH_MODEL, state_dir=state, audit=False, plugins=False, profile=p)
                for p in PROFILES
            }
            try:
                listed = {p: tb.listed() for p, tb in boxes.items()}
                prompts = {p: prompt_text(tb, []) for p, tb in boxes.items()}
            finally:
                for tb in boxes.values():
                    tb.close()
            over_stdio = stdio.result()

    # Each tool once, in every format; the /prompt sections from the full profile's prompt.
    every = listed["full"]
    size: dict[str, dict[str, tuple[int, int]]] = {
        t.name: {f: count(convert(t)) for f, convert in CONVERTERS.items()} for t in every
    }
    for name, section in prompt_sections(prompts["full"]).items():
        if name in size:
            size[name][PROMPT] = count(section)

    def total(profile: str, fmt: str) -> tuple[int, int]:
        sizes = [size[t.name][fmt] for t in listed[profile]]
        return sum(s[0] for s in sizes), sum(s[1] for s in sizes)

    print(f"What a model is handed, per door and format — {describe()}")
    print(
        f"characters, and cl100k tokens (bpe-openai {version('bpe-openai')}); "
        "MCP = {name, description, inputSchema} as JSON, OpenAI/Anthropic = the whole "
        "declaration as JSON, a profile's total the sum of its tools'; /prompt = the whole "
        "prompt, without skills (every tool but call_tool, a web chat names tools itself)\n"
    )

    # (1) per profile
    rows: list[list[object]] = []
    for p in PROFILES:
        row: list[object] = [p + (" (default)" if p == DEFAULT_PROFILE else ""), len(listed[p])]
        for fmt in JSON_FORMATS:
            chars, tokens = total(p, fmt)
            row += [num(chars), num(tokens)]
        row += list(map(num, count(prompts[p])))
        rows.append(row)
    ref = over_stdio["reference"]
    ref_name = f"MCP reference filesystem server {reference_version()}, over stdio"
    if isinstance(ref, list):
        chars, tokens = sum(len(e) for e in ref), sum(count(e)[1] for e in ref)
        rows.append([ref_name, len(ref), num(chars), num(tokens), *[""] * 8])
    else:
        rows.append([f"{ref_name}: not measured ({ref})", *[""] * 11])
    head = ["profile", "tools"]
    for fmt in (*JSON_FORMATS, PROMPT):
        head += [f"{fmt} chars", f"{fmt} tokens"]
    table(head, rows)

    # Ours over stdio against the figure above.
    for p in (DEFAULT_PROFILE, "full"):
        got = over_stdio[p]
        mine = total(p, "MCP")
        if isinstance(got, str):
            print(f"`serve mcp --profile {p}` over stdio: not measured ({got})")
            continue
        chars = sum(len(e) for e in got)
        same = "equal" if (len(got), chars) == (len(listed[p]), mine[0]) else "DIFFERENT"
        print(
            f"`serve mcp --profile {p}` over stdio: {len(got)} tools, {num(chars)} chars; "
            f"in process {len(listed[p])} tools, {num(mine[0])} chars: {same}"
        )
    print()

    # (2) per tool, every tool, biggest first
    in_profiles = {t.name: [p for p in PROFILES if p != "full" and t in listed[p]] for t in every}
    everywhere = [p for p in PROFILES if p != "full"]
    rows = []
    for t in sorted(every, key=lambda t: (-size[t.name]["MCP"][0], t.name)):
        s = size[t.name]
        where = in_profiles[t.name]
        row = [t.name]
        for fmt in (*JSON_FORMATS, PROMPT):
            chars, tokens = s.get(fmt, (0, 0))
            row += [num(chars), num(tokens)] if fmt in s else ["—", "—"]
        row.append("all" if where == everywhere else ", ".join(where) or "full only")
        rows.append(row)
    head = ["tool (full profile)"]
    for fmt in (*JSON_FORMATS, PROMPT):
        head += [f"{fmt} chars", "tokens"]
    table([*head, "listed by"], rows)

    # (3) the budgets
    longest = max(every, key=lambda t: len(t.description))
    default_mcp = total(DEFAULT_PROFILE, "MCP")
    all_mcp = total("full", "MCP")
    default_prompt = count(prompts[DEFAULT_PROFILE])

    def verdict(value: int, budget: int) -> str:
        return "OK" if value <= budget else "OVER"

    table(
        ["budget (issue #21)", "at most", "measured", "tokens", ""],
        [
            [
                f"longest tool description ({longest.name})",
                num(MAX_DESCRIPTION),
                num(len(longest.description)),
                "",
                verdict(len(longest.description), MAX_DESCRIPTION),
            ],
            [
                f"default profile ({DEFAULT_PROFILE}), MCP listing",
                num(MAX_DEFAULT_MCP),
                num(default_mcp[0]),
                num(default_mcp[1]),
                verdict(default_mcp[0], MAX_DEFAULT_MCP),
            ],
            [
                f"every tool ({len(every)}), MCP listing",
                num(MAX_ALL_MCP),
                num(all_mcp[0]),
                num(all_mcp[1]),
                verdict(all_mcp[0], MAX_ALL_MCP),
            ],
            [
                f"/prompt, default profile ({DEFAULT_PROFILE}); openlink's own",
                num(MAX_DEFAULT_PROMPT),
                num(default_prompt[0]),
                num(default_prompt[1]),
                verdict(default_prompt[0], MAX_DEFAULT_PROMPT),
            ],
        ],
    )

    def change(before: int, now: int) -> str:
        return f"{(now - before) / before:+.0%}"

    full_prompt = count(prompts["full"])
    rows = [
        [
            "every tool, MCP listing",
            num(BEFORE_ALL_MCP),
            num(all_mcp[0]),
            change(BEFORE_ALL_MCP, all_mcp[0]),
        ],
        [
            "/prompt, every tool listed (now: --profile full)",
            num(BEFORE_PROMPT),
            num(full_prompt[0]),
            change(BEFORE_PROMPT, full_prompt[0]),
        ],
        [
            "/prompt, what every door hands by default",
            num(BEFORE_PROMPT),
            num(default_prompt[0]),
            change(BEFORE_PROMPT, default_prompt[0]),
        ],
        [
            "MCP listing, what every door hands by default",
            num(BEFORE_ALL_MCP),
            num(default_mcp[0]),
            change(BEFORE_ALL_MCP, default_mcp[0]),
        ],
    ]
    if isinstance(ref, list):
        ref_chars = sum(len(e) for e in ref)
        rows.append(
            [
                f"the reference server's listing ({len(ref)} tools)",
                num(BEFORE_REFERENCE),
                num(ref_chars),
                change(BEFORE_REFERENCE, ref_chars),
            ]
        )
    table(["characters", "before this issue", "now", "change"], rows)
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
