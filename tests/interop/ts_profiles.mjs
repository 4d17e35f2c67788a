// The MCP TypeScript SDK's Client from the default profile to a tool it does not list:
// list tools, call find_tools, let the client re-list when the server sends
// notifications/tools/list_changed (the SDK's own listChanged handling), then call a
// browser tool the new list holds. Prints one JSON summary on stdout.
//
//   node ts_profiles.mjs QUERY TOOL stdio COMMAND [ARGS...]
//   node ts_profiles.mjs QUERY TOOL http URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const REFRESH_WAIT_MS = 10000;

function makeTransport(mode, rest) {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
  }
  const token = process.env.LOCAL_TOOLS_TOKEN;
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  return new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit });
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function main() {
  const [query, toolName, mode, ...rest] = process.argv.slice(2);
  let refreshed;
  const changed = new Promise((resolve) => {
    refreshed = resolve;
  });
  const client = new Client(
    { name: "local-tools-profiles", version: "1.0.0" },
    {
      listChanged: {
        tools: {
          debounceMs: 0,
          onChanged: (error, tools) => refreshed(error ? { error: String(error) } : { tools }),
        },
      },
    },
  );
  await client.connect(makeTransport(mode, rest));
  const summary = {};
  try {
    summary.capabilities = client.getServerCapabilities();
    summary.before = (await client.listTools()).tools.map((t) => t.name);
    const found = await client.callTool({ name: "find_tools", arguments: { query } });
    summary.found = { isError: found.isError === true, text: text(found) };
    const timeout = new Promise((resolve) =>
      setTimeout(() => resolve({ error: "no list_changed within the wait" }), REFRESH_WAIT_MS),
    );
    const after = await Promise.race([changed, timeout]);
    summary.after = after.tools ? after.tools.map((t) => t.name) : null;
    summary.refreshError = after.error ?? null;
    if (summary.after?.includes(toolName)) {
      const r = await client.callTool({ name: toolName, arguments: {} });
      summary.called = { isError: r.isError === true, text: text(r) };
    }
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((err) => {
  process.stderr.write(`ts_profiles: ${err?.stack ?? err}\n`);
  process.exit(1);
});
