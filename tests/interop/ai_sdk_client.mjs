// The Vercel AI SDK's MCP client (@ai-sdk/mcp) for the interop tests
// (tests/interop/test_ai_sdk.py), as a host built on the AI SDK uses it.
//
//   node ai_sdk_client.mjs AI_SDK_NODE_MODULES stdio COMMAND [ARGS...]
//   node ai_sdk_client.mjs AI_SDK_NODE_MODULES http URL
//
// It connects (server/discover first, falling back to initialize when the
// probe goes unanswered for 1 s over stdio), lists the tools both ways
// (`tools()` for the AI SDK's generateText, `listTools()`), calls `chatty`
// and `confirm` (answering its form), and prints one JSON object on stdout.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, mode, ...rest] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const { createMCPClient, ElicitationRequestSchema } = await load("@ai-sdk/mcp");

let transport;
if (mode === "stdio") {
  const { StdioMCPTransport } = await load("@ai-sdk/mcp/mcp-stdio");
  transport = new StdioMCPTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" });
} else if (mode === "http") {
  transport = { type: "http", url: rest[0] };
} else {
  throw new Error(`unknown mode ${mode}`);
}

const client = await createMCPClient({ transport, capabilities: { elicitation: {} } });
const asked = [];
client.onElicitationRequest(ElicitationRequestSchema, async (request) => {
  asked.push({ message: request.params.message, schema: request.params.requestedSchema });
  return { action: "accept", content: { ok: true, note: "from ai-sdk" } };
});
const text = (result) => result.content.map((block) => block.text).join("");
const out = { version: client.protocolVersion ?? null };
out.tools = Object.keys(await client.tools()).sort();
out.listed = (await client.listTools()).tools.map((tool) => tool.name).sort();
const chatty = await client.callTool({ name: "chatty", arguments: {} });
out.chatty = { text: text(chatty), isError: chatty.isError ?? false };
const confirm = await client.callTool({ name: "confirm", arguments: { prompt: "Go?" } });
out.confirm = { text: text(confirm), isError: confirm.isError ?? false };
out.asked = asked;
console.log(JSON.stringify(out));
await client.close();
