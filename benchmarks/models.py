"""task and compact (issue #25): what local-tools adds around a model, side by side.

    .venv/bin/python benchmarks/models.py [--rounds N] [--steps N]

A scripted model on loopback (tests/model_server.py: both wire formats, real HTTP) answers
at once, so what is measured is ours and the SDKs', not a model's thinking:
- one model request: the bare SDK (`openai.OpenAI` / `anthropic.Anthropic`, one client
  reused, as a script would) against our client (`open_model(...).complete`: a new
  client per call, as task and compact open one, the SSRF guard, the translation);
- one subagent step: `task` with N steps (N-1 `read_file` calls, then the answer)
  through `Toolbox.run`, against the very requests it sent (its tools' schemas, the
  growing transcript) replayed by the bare SDK plus N-1 `Toolbox.run("read_file")`
  calls: the difference per step is the loop's own cost (a client per task, streaming,
  the transcript written twice a step, tool rendering);
- compact of a 200-message transcript (tests/compaction/transcripts.py) without a model.
Medians of `--rounds` rounds; the machine is named.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "compaction"))

import anthropic  # noqa: E402
import openai  # noqa: E402
from transcripts import openai_messages, turns  # noqa: E402

from local_tools import Toolbox  # noqa: E402
from local_tools.core.config import load_config  # noqa: E402
from local_tools.models import open_model  # noqa: E402
from local_tools.models.types import Message  # noqa: E402
from machine import describe  # noqa: E402
from model_server import ScriptedModel, model_config, text, tool_call  # noqa: E402

warnings.simplefilter("ignore", DeprecationWarning)  # bpe_openai's import


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(func: Callable[[], Any], rounds: int) -> list[float]:
    func()  # warm: imports, connections, encodings
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def bare_request(srv: ScriptedModel, api: str) -> Callable[[], None]:
    if api == "openai":
        oa = openai.OpenAI(base_url=srv.openai_base_url, api_key="unused", max_retries=0)

        def call_openai() -> None:
            srv.script(text("ok"))
            oa.chat.completions.create(
                model="scripted-1", messages=[{"role": "user", "content": "hi"}]
            )

        return call_openai
    an = anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="unused", max_retries=0)

    def call_anthropic() -> None:
        srv.script(text("ok"))
        an.messages.create(
            model="scripted-1", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )

    return call_anthropic


def our_request(srv: ScriptedModel, api: str, ws: Path) -> Callable[[], None]:
    config = load_config(model_config(srv, api=api, stream=False), ws)

    async def once() -> None:
        client = open_model(config, purpose="task", local_servers=lambda: ())
        try:
            await client.complete("", [Message("user", "hi")])
        finally:
            await client.aclose()

    def call() -> None:
        srv.script(text("ok"))
        asyncio.run(once())

    return call


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=10)
    opts = parser.parse_args()
    print(f"# task and compact — {describe()}")
    print(f"# {opts.rounds} rounds; a scripted model on 127.0.0.1 answering at once\n")
    with tempfile.TemporaryDirectory() as tmp, ScriptedModel() as srv:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("hello\n" * 20)
        rows = []
        for api in ("openai", "anthropic"):
            bare = median_ms(timed(bare_request(srv, api), opts.rounds))
            ours = median_ms(timed(our_request(srv, api, ws), opts.rounds))
            rows.append((f"one model request ({api})", bare, ours))
        state = Path(tmp) / "state"
        allow = {"permissions": {"read:file": "allow"}}
        tb = Toolbox(ws, {**allow, **model_config(srv)}, state_dir=state)
        steps = opts.steps
        try:
            read = median_ms(timed(lambda: tb.run("read_file", {"path": "a.txt"}), opts.rounds))

            def run_task() -> None:
                srv.script(*[tool_call("read_file", {"path": "a.txt"})] * (steps - 1))
                srv.script(text("done"))
                envelope = tb.run("task", {"description": "bench", "prompt": "read a.txt"})
                assert envelope["success"], envelope

            task_ms = median_ms(timed(run_task, max(5, opts.rounds // 3)))
            # The floor sends the very requests the task sent (its tools' schemas, the
            # growing transcript) through the bare SDK: what any agent loop would pay.
            bodies = [dict(r.body) for r in srv.requests[-steps:]]
            oa = openai.OpenAI(base_url=srv.openai_base_url, api_key="unused", max_retries=0)

            def replay() -> None:
                for body in bodies:
                    srv.script(text("ok"))
                    body.pop("stream_options", None)
                    oa.chat.completions.create(**{**body, "stream": False})

            floor = median_ms(timed(replay, max(5, opts.rounds // 3))) + (steps - 1) * read
            rows.append(
                (
                    f"task of {steps} steps (floor: its requests by the SDK + read_file)",
                    floor,
                    task_ms,
                )
            )
            conversation = openai_messages(turns())
            compact_args = {"messages": conversation, "budget": 20000}
            compact_ms = median_ms(timed(lambda: tb.run("compact", compact_args), 5))
            result = tb.run("compact", compact_args)["output"]
        finally:
            tb.close()
    print("| what | floor (ms) | local-tools (ms) | added |")
    print("|---|--:|--:|--:|")
    for what, floor_ms, ours_ms in rows:
        print(f"| {what} | {floor_ms:.2f} | {ours_ms:.2f} | {ours_ms - floor_ms:+.2f} ms |")
    per_step = (rows[-1][2] - rows[-1][1]) / steps
    print(f"\nThe task loop's own cost: {per_step:+.2f} ms a step.")
    print(
        f"compact of {len(conversation)} messages without a model: {compact_ms:.1f} ms, "
        f"{result['tokens_before']:,} → {result['tokens_after']:,} tokens "
        f"(budget 20,000, fits: {result['fits']}, {len(result['dropped'])} pieces stubbed)"
    )


if __name__ == "__main__":
    main()
