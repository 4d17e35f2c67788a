"""What the servers (`serve http`, `serve mcp`) share below their protocol: the
start-up chores (`startup.py`) and the MCP server's per-workspace Toolboxes
(`workspaces.py`). Never imports a transport."""
