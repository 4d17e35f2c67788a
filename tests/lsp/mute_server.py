"""A language server that answers initialize and shutdown and never publishes
diagnostics: what `pending` must look like (tests/lsp/test_diagnostics_after_edit.py).

Stdin/stdout LSP (Content-Length framing), standard library only.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    length = -1
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    message = json.loads(stream.read(length))
    return message if isinstance(message, dict) else {}


def send(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (message := read_message(stdin)) is not None:
        method, msg_id = message.get("method"), message.get("id")
        if method == "exit":
            return
        if msg_id is None:  # notifications (didOpen, didChange): heard, never answered
            continue
        result: Any = {"capabilities": {"textDocumentSync": 1}} if method == "initialize" else None
        send(stdout, {"jsonrpc": "2.0", "id": msg_id, "result": result})


if __name__ == "__main__":
    main()
