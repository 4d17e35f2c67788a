// The MCP TypeScript SDK's Client (the one Claude Desktop and VS Code use) against
// local-tools: connect, list tools, call read_file and edit, then an unknown tool and
// failing calls. Prints one JSON summary on stdout; the pytest side asserts on it.
//
//   node ts_client.mjs [--path a.txt --old world --new there] stdio COMMAND [ARGS...]
//   node ts_client.mjs [--path a.txt --old world --new there] http URL
//
// Exit 0 when the summary was printed (whatever it says), 1 when the client crashed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

const SDK_PACKAGE = "./node_modules/@modelcontextprotocol/sdk/package.json";

function parseArgs(argv) {
  const opts = { path: "a.txt", old: "world", new: "there" };
  let i = 0;
  while (argv[i]?.startsWith("--")) {
    opts[argv[i].slice(2)] = argv[i + 1];
    i += 2;
  }
  const [mode, ...rest] = argv.slice(i);
  if (!["stdio", "http"].includes(mode) || rest.length === 0) {
    throw new Error("usage: ts_client.mjs [--path P --old S --new S] stdio CMD [ARGS...] | http URL");
  }
  return { opts, mode, rest };
}

function makeTransport(mode, rest) {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    // The whole environment, not the SDK's short default list: the test passes the
    // server's state dir and PYTHONPATH through it. The server's stderr goes to ours.
    return new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
  }
  // local-tools' HTTP servers want its bearer token (LOCAL_TOOLS_TOKEN in the test).
  const token = process.env.LOCAL_TOOLS_TOKEN;
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  return new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit });
}

// A call's outcome as data: a protocol error or a client-side rejection (e.g. output
// schema validation) is recorded, not thrown, so the test can tell it from isError.
async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    const text = (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
    return { isError: r.isError === true, text, structuredContent: r.structuredContent ?? null };
  } catch (err) {
    return { thrown: String(err?.message ?? err), code: err?.code ?? null };
  }
}

async function main() {
  const { opts, mode, rest } = parseArgs(process.argv.slice(2));
  const transport = makeTransport(mode, rest);
  // The client hands the negotiated version to the transport (HTTP needs it in a
  // header); wrapping that hook is the only way to observe it for stdio too.
  let negotiated = null;
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiated = v;
    setVersion?.(v);
  };
  const client = new Client({ name: "local-tools-interop", version: "1.0.0" });
  const summary = {
    // Read from the file: the package's exports map "./package.json" to a stub.
    sdkVersion: JSON.parse(readFileSync(new URL(SDK_PACKAGE, import.meta.url), "utf8")).version,
    clientLatestProtocol: LATEST_PROTOCOL_VERSION,
  };
  await client.connect(transport);
  try {
    summary.protocolVersion = negotiated;
    summary.server = client.getServerVersion();
    const { tools } = await client.listTools();
    summary.tools = tools.map((t) => ({
      name: t.name,
      inputSchemaType: t.inputSchema?.type ?? null,
      annotations: t.annotations ?? null,
      hasOutputSchema: t.outputSchema !== undefined,
    }));
    summary.read = await call(client, "read_file", { path: opts.path });
    summary.edit = await call(client, "edit", {
      path: opts.path,
      old_string: opts.old,
      new_string: opts.new,
    });
    summary.unknown = await call(client, "no_such_tool", {});
    summary.missing = await call(client, "read_file", { path: "no-such-file.txt" });
    summary.wrongTypes = await call(client, "read_file", { path: 5, limit: "many" });
    summary.readAfter = await call(client, "read_file", { path: opts.path });
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((err) => {
  process.stderr.write(`ts_client: ${err?.stack ?? err}\n`);
  process.exit(1);
});
