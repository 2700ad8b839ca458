// A TypeScript SDK client for the interop tests (tests/interop/test_typescript_sdk.py).
//
//   node ts_client.mjs SDK_NODE_MODULES stdio COMMAND [ARGS...]
//   node ts_client.mjs SDK_NODE_MODULES http URL
//
// It connects with the SDK's `Client` over `StdioClientTransport` or
// `StreamableHTTPClientTransport`, answers sampling and elicitation with
// `setRequestHandler` (like a real host would), lists the tools, calls
// `ask` (samples), `confirm` (elicits) and `add` (typed arguments), and prints
// one JSON object on stdout for the test to check.
//
// The SDK is loaded from the node_modules directory given as the first
// argument (.ci/install-interop caches it outside the repo); ES modules ignore
// NODE_PATH, so it is resolved with createRequire from there.
import { createRequire } from "node:module";
import path from "node:path";

const [modules, mode, ...rest] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require(
  "@modelcontextprotocol/sdk/client/streamableHttp.js",
);
const {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LATEST_PROTOCOL_VERSION,
} = require("@modelcontextprotocol/sdk/types.js");

function transportFor() {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, stderr: "inherit" });
  }
  if (mode === "http") return new StreamableHTTPClientTransport(new URL(rest[0]));
  throw new Error(`unknown mode ${mode}`);
}

const client = new Client(
  { name: "ts-interop", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {} } } },
);
const seen = { sampling: [], elicitation: [] };

client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
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
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  seen.elicitation.push(request.params);
  return { action: "accept", content: { ok: true, note: "from ts" } };
});

const transport = transportFor();
// The SDK tells the transport the negotiated version; keep it for the test.
let negotiated = null;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  negotiated = version;
  setVersion?.(version);
};

const text = (result) => result.content.map((block) => block.text).join("");
try {
  await client.connect(transport);
  const listed = await client.listTools();
  const asked = await client.callTool({ name: "ask", arguments: { prompt: "hello" } });
  const confirmed = await client.callTool({ name: "confirm", arguments: { prompt: "Go?" } });
  const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  const out = {
    sdkLatest: LATEST_PROTOCOL_VERSION,
    negotiated,
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
