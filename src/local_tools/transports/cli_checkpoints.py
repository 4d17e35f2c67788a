"""`local-tools checkpoints` and `local-tools undo`: the undo history at the terminal.

Both go through the toolbox's tools (checkpoint_list, checkpoint_diff, restore) with
`all_sessions` and transport "cli": the person at the terminal sees every session's
calls, every user's. `undo` shows the restore's plan, asks for confirmation (or takes
`--yes`), makes the plan again and stops if it is not the one shown (a call made while
the person read it), then restores with the person's confirmation standing for the
tool's own write/delete asks; a rule that denies still denies. The restore is itself a
checkpoint: `undo` again takes it back.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from local_tools.interact.confirmed import ConfirmedAsker

__all__ = ["add_parsers", "run_checkpoints", "run_undo"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
TRANSPORT = "cli"  # a person's door: all_sessions covers every user (tools/_checkpoints.py)


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    cps = sub.add_parser(
        "checkpoints", parents=[common], help="the calls that changed files (each undoable)"
    )
    cps.add_argument("--limit", type=int, default=20, help="how many, newest first")
    cps.add_argument("--diff", type=int, metavar="ID", help="show what checkpoint ID changed")
    cps.add_argument("--json", action="store_true")
    cps.add_argument("--gc", action="store_true", help="drop expired checkpoints and collect now")
    undo = sub.add_parser(
        "undo", parents=[common], help="put files back to before the last N calls (default 1)"
    )
    undo.add_argument("n", nargs="?", type=int, default=1, metavar="N")
    undo.add_argument("--to", type=int, metavar="ID", help="to before checkpoint ID instead")
    undo.add_argument("--path", action="append", dest="paths", help="only this file or folder")
    undo.add_argument("--force", action="store_true", help="overwrite files changed since")
    undo.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def run_checkpoints(tb: Any, ns: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    if ns.gc:
        from local_tools.checkpoints.retention import collect
        from local_tools.checkpoints.store import Checkpoints, checkpoint_folder

        conf = tb.config.checkpoints
        store = Checkpoints(
            checkpoint_folder(tb.state_dir, tb.jail.root), tb.jail, max_bytes=0, watch=False
        )
        try:
            done = collect(store, keep_days=conf.keep_days, max_size_mb=conf.max_size_mb)
        finally:
            store.close()
        out.write(
            f"dropped {done.dropped} checkpoint(s); store {done.size_before / 2**20:.1f} MB -> "
            f"{done.size_after / 2**20:.1f} MB\n"
        )
        return EXIT_OK
    if ns.diff is not None:
        args = {"checkpoint": ns.diff, "all_sessions": True}
        env = tb.run("checkpoint_diff", args, transport=TRANSPORT)
    else:
        args = {"limit": ns.limit, "all_sessions": True}
        env = tb.run("checkpoint_list", args, transport=TRANSPORT)
    if ns.json:
        out.write(json.dumps(env, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(tb.render(env) + "\n")
    return EXIT_OK if env["success"] else EXIT_FAILED


def run_undo(
    tb: Any,
    ns: argparse.Namespace,
    out: TextIO = sys.stdout,
    stdin: TextIO = sys.stdin,
) -> int:
    target = ns.to if ns.to is not None else _nth_newest(tb, ns.n, out)
    if target is None:
        return EXIT_FAILED
    args: dict[str, Any] = {"checkpoint": target, "all_sessions": True, "force": ns.force}
    if ns.paths:
        args["paths"] = ns.paths
    plan = tb.run("restore", {**args, "dry_run": True}, transport=TRANSPORT)
    out.write(tb.render(plan) + "\n")
    if not plan["success"]:
        return EXIT_FAILED
    conflicts = [p for p in plan["output"]["plan"] if "conflict" in p]
    if conflicts and not ns.force:
        out.write("Files changed since: nothing restored. --force overwrites them; --path picks.\n")
        return EXIT_FAILED
    if not any(p["action"] != "unchanged" for p in plan["output"]["plan"]):
        return EXIT_OK
    if not ns.yes:
        if not stdin.isatty():
            out.write("Not restored: confirm at a terminal, or pass --yes.\n")
            return EXIT_USAGE
        out.write("Restore these files? [y/N] ")
        out.flush()
        if stdin.readline().strip().lower() not in ("y", "yes"):
            out.write("Nothing restored.\n")
            return EXIT_FAILED
        # The person read the plan for a while: calls made meanwhile would be undone
        # too, unseen. The plan again; a different one is shown, nothing restored.
        again = tb.run("restore", {**args, "dry_run": True}, transport=TRANSPORT)
        if not again["success"] or _seen(again) != _seen(plan):
            out.write(tb.render(again) + "\n")
            out.write("The plan changed since you looked (other calls): nothing restored.\n")
            return EXIT_FAILED
    asker = ConfirmedAsker(("write:file", "delete:file"), who="terminal (local-tools undo)")
    done = tb.run("restore", args, asker=asker, transport=TRANSPORT)
    out.write(tb.render(done) + "\n")
    return EXIT_OK if done["success"] and not done["output"]["failed"] else EXIT_FAILED


def _seen(envelope: dict[str, Any]) -> tuple[list[int], list[dict[str, Any]]]:
    """What the person confirms: the checkpoints undone and each path's step."""
    output = envelope["output"]
    return sorted(output["undone"]), output["plan"]


def _nth_newest(tb: Any, n: int, out: TextIO) -> int | None:
    if n < 1:
        out.write("N must be 1 or more.\n")
        return None
    args = {"limit": min(n, 200), "all_sessions": True}
    env = tb.run("checkpoint_list", args, transport=TRANSPORT)
    items = env["output"]["checkpoints"] if env["success"] else []
    if len(items) < n:
        have = f"only {len(items)}" if items else "none"
        out.write(f"There are {have} checkpoint(s) in this workspace; nothing restored.\n")
        return None
    return int(items[n - 1]["id"])
