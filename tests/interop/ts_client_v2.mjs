// A TypeScript SDK v2 client (@modelcontextprotocol/client) for the interop
// tests (tests/interop/test_typescript_sdk.py). v2 speaks 2026-07-28 too.
//
//   node ts_client_v2.mjs CLIENT_NODE_MODULES ERA stdio COMMAND [ARGS...]
//   node ts_client_v2.mjs CLIENT_NODE_MODULES ERA http URL
//
// ERA is `legacy` (the 2025-11-25 initialize handshake) or a version to pin
// (`2026-07-28`: server/discover, and input_required rounds the SDK answers
// through the same setRequestHandler handlers). Otherwise as ts_client.mjs:
// lists the tools, calls `ask` (samples), `confirm` (elicits) and `add`, and
// prints one JSON object on stdout.
import { createRequire } from "node:module";
import path from "node:path";

const [modules, era, mode, ...rest] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");
const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");

function transportFor() {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, stderr: "inherit" });
  }
  if (mode === "http") return new StreamableHTTPClientTransport(new URL(rest[0]));
  throw new Error(`unknown mode ${mode}`);
}

const client = new Client(
  { name: "ts-interop-v2", version: "2.0.0" },
  {
    capabilities: { sampling: {}, elicitation: { form: {} } },
    versionNegotiation: { mode: era === "legacy" ? "legacy" : { pin: era } },
  },
);
const seen = { sampling: [], elicitation: [] };

client.setRequestHandler("sampling/createMessage", async (request) => {
  const { messages, systemPrompt, maxTokens } = request.params;
  const text = messages[messages.length - 1].content.text;
  seen.sampling.push(request.params);
  return {
    role: "assistant",
    content: { type: "text", text: `ts says ${text} (${systemPrompt ?? ""}, ${maxTokens})` },
    model: "ts-model",
    stopReason: "endTurn",
  };
});
client.setRequestHandler("elicitation/create", async (request) => {
  seen.elicitation.push(request.params);
  return { action: "accept", content: { ok: true, note: "from ts" } };
});

const text = (result) => result.content.map((block) => block.text).join("");
try {
  await client.connect(transportFor());
  const listed = await client.listTools();
  const asked = await client.callTool({ name: "ask", arguments: { prompt: "hello" } });
  const confirmed = await client.callTool({ name: "confirm", arguments: { prompt: "Go?" } });
  const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  const out = {
    negotiated: client.getNegotiatedProtocolVersion(),
    server: client.getServerVersion(),
    tools: listed.tools.map((tool) => tool.name).sort(),
    ask: { text: text(asked), isError: asked.isError ?? false },
    confirm: { text: text(confirmed), isError: confirmed.isError ?? false },
    add: { text: text(added), isError: added.isError ?? false },
    seen,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
  await client.close();
}
