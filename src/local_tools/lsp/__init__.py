"""Language servers: diagnostics after edits and the lsp tool's navigation.

jsonrpc.py frames JSON-RPC over a server's stdio; client.py is one running server
(documents, versioned diagnostics, requests); manager.py starts, restarts and stops them
per (server, project root); confine.py launches them inside the sandbox; specs.py says
which server handles a file ([lsp.NAME] in local-tools.toml).
"""
