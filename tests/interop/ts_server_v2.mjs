// A TypeScript SDK v2 server (@modelcontextprotocol/server) for the interop
// tests (tests/interop/test_typescript_v2_server.py): the way its README
// writes one, a factory that serves both eras.
//
//   node ts_server_v2.mjs SERVER_NODE_MODULES stdio
//   node ts_server_v2.mjs SERVER_NODE_MODULES http
//
// stdio: serveStdio (a 2025-11-25 initialize is pinned to a 2025-era
// instance, server/discover to a 2026-07-28 one). http: createMcpHandler on
// node:http at 127.0.0.1 on a free port, printing `listening on URL` on
// stderr. Tools: `add` (structured output), `confirm` (asks a form through
// an input_required round, as v2 servers do in 2026-07-28), `haiku` (asks a
// sample the same way); a resource `note://one` and a prompt `greet`.
import { createRequire } from "node:module";
import path from "node:path";
import { createServer } from "node:http";

const [modules, mode] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const { McpServer, inputRequired, acceptedContent, createMcpHandler } = require("@modelcontextprotocol/server");
const { serveStdio } = require("@modelcontextprotocol/server/stdio");
const z = require("zod");

function factory() {
  const server = new McpServer(
    { name: "ts-v2-interop", version: "2.4.0" },
    { capabilities: { tools: {}, resources: {}, prompts: {} } },
  );
  server.registerTool(
    "add",
    {
      description: "Add two numbers",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      outputSchema: z.object({ sum: z.number() }),
    },
    async ({ a, b }) => ({
      content: [{ type: "text", text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    "confirm",
    { description: "Ask to confirm", inputSchema: z.object({ what: z.string() }) },
    async ({ what }, ctx) => {
      const got = acceptedContent(ctx.mcpReq.inputResponses, "confirm");
      if (got === undefined) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: `Do ${what}?`,
              requestedSchema: z.object({ ok: z.boolean() }),
            }),
          },
        });
      }
      return { content: [{ type: "text", text: got.ok ? `did ${what}` : "not done" }] };
    },
  );
  server.registerTool(
    "haiku",
    { description: "Ask the model", inputSchema: z.object({ topic: z.string() }) },
    async ({ topic }, ctx) => {
      const reply = ctx.mcpReq.inputResponses?.poem;
      if (reply === undefined) {
        return inputRequired({
          inputRequests: {
            poem: inputRequired.createMessage({
              messages: [{ role: "user", content: { type: "text", text: `haiku about ${topic}` } }],
              maxTokens: 50,
            }),
          },
        });
      }
      return { content: [{ type: "text", text: `model ${reply.model}: ${reply.content?.text}` }] };
    },
  );
  server.registerResource(
    "note",
    "note://one",
    { description: "A note", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, text: "hello" }] }),
  );
  server.registerPrompt(
    "greet",
    { description: "Greet", argsSchema: z.object({ name: z.string() }) },
    ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `hi ${name}` } }] }),
  );
  return server;
}

if (mode === "stdio") {
  serveStdio(factory);
} else if (mode === "http") {
  const { toNodeHandler } = require("@modelcontextprotocol/node");
  const handle = toNodeHandler(createMcpHandler(factory));
  const http = createServer((req, res) => handle(req, res));
  http.listen(0, "127.0.0.1", () => {
    console.error(`listening on http://127.0.0.1:${http.address().port}/mcp`);
  });
} else {
  throw new Error(`unknown mode ${mode}`);
}
