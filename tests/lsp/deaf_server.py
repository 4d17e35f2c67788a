"""An LSP server that answers initialize, then never reads its input again: a stuck
server must not hold an edit past [lsp] wait, nor the toolbox's close."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mute_server import read_message, send

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
while (message := read_message(stdin)) is not None:
    if message.get("method") == "initialize":
        result = {"capabilities": {"hoverProvider": True, "textDocumentSync": 1}}
        send(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
    if message.get("method") == "initialized":
        break
time.sleep(3600)
