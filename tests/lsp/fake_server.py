"""A tiny scripted language server for the failure cases real servers will not stage.

    python fake_server.py [--no-init] [--no-publish] [--crash-on METHOD]
                          [--hang-on METHOD] [--garbage-on METHOD] [--huge-on METHOD]
                          [--record FILE]

Stdin/stdout LSP (Content-Length framing), standard library only. By default it answers
initialize, publishes one diagnostic per line holding "ERROR" for the version it was
sent, and answers `fake/echo` with its params. `--record` appends every method it
receives ($/cancelRequest, didClose, ...) as a JSON line. `fake/probe` tries what a
confined server must not do (and what it must) and answers with each outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from mute_server import read_message


def send(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def probe(params: dict[str, Any]) -> dict[str, str]:
    """Each attempt: "ok: ..." or the error it met."""
    out: dict[str, str] = {}
    for key, path in params.get("write", {}).items():
        try:
            with open(path, "w") as f:
                f.write("written by the fake server\n")
            out[key] = "ok"
        except OSError as exc:
            out[key] = f"{type(exc).__name__}: {exc.strerror}"
    for key, path in params.get("read", {}).items():
        try:
            with open(path) as f:
                out[key] = f"ok: {f.read(200)}"
        except OSError as exc:
            out[key] = f"{type(exc).__name__}: {exc.strerror}"
    for key, port in params.get("connect", {}).items():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=3) as conn:
                out[key] = f"ok: {conn.recv(16).decode()}"
        except OSError as exc:
            out[key] = f"{type(exc).__name__}: {exc}"
    tmp = os.environ.get("TMPDIR", "")
    try:
        with open(os.path.join(tmp, "probe.txt"), "w") as f:
            f.write("the server's own temp dir\n")
        out["tmp_write"] = "ok"
    except OSError as exc:
        out["tmp_write"] = f"{type(exc).__name__}: {exc.strerror}"
    out["tmpdir"] = tmp
    return out


def diagnostics(text: str) -> list[dict[str, Any]]:
    return [
        {
            "range": {
                "start": {"line": n, "character": 0},
                "end": {"line": n, "character": len(line)},
            },
            "severity": 1,
            "message": "fake error",
            "source": "fake",
        }
        for n, line in enumerate(text.splitlines())
        if "ERROR" in line
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-init", action="store_true")
    parser.add_argument("--no-publish", action="store_true")
    parser.add_argument("--crash-on", default="")
    parser.add_argument("--hang-on", default="")
    parser.add_argument("--garbage-on", default="")
    parser.add_argument("--huge-on", default="")
    parser.add_argument("--record", default="")
    opts = parser.parse_args()
    stdin = sys.stdin.buffer
    while True:
        message = read_message(stdin)
        if message is None:
            return 0
        method = message.get("method", "")
        params = message.get("params") or {}
        if opts.record:
            with open(opts.record, "a") as f:
                f.write(json.dumps({"method": method, "params": params}) + "\n")
        msg_id = message.get("id")
        if method == opts.crash_on:
            os._exit(3)
        if method == opts.garbage_on:
            sys.stdout.buffer.write(b"Content-Length: 12\r\n\r\n{not json!!}")
            sys.stdout.buffer.flush()
            continue
        if method == opts.huge_on:
            sys.stdout.buffer.write(b"Content-Length: 99999999999\r\n\r\n")
            sys.stdout.buffer.flush()
            continue
        if method == opts.hang_on or (method == "initialize" and opts.no_init):
            continue
        if method == "exit":
            return 0
        if method in ("textDocument/didOpen", "textDocument/didChange") and not opts.no_publish:
            doc = params["textDocument"]
            text = doc["text"] if "text" in doc else params["contentChanges"][-1]["text"]
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/publishDiagnostics",
                    "params": {
                        "uri": doc["uri"],
                        "version": doc["version"],
                        "diagnostics": diagnostics(text),
                    },
                }
            )
        if msg_id is None:
            continue
        result: Any = None
        if method == "initialize":
            result = {"capabilities": {"textDocumentSync": 1}, "serverInfo": {"name": "fake"}}
        elif method == "fake/echo":
            result = params
        elif method == "fake/probe":
            result = probe(params)
        send({"jsonrpc": "2.0", "id": msg_id, "result": result})


if __name__ == "__main__":
    sys.exit(main())
