// anthropic-toolrunner runs one real agent built with the pinned Anthropic
// SDK (@anthropic-ai/sdk, testdata/peers): its tool runner
// (client.beta.messages.toolRunner) loops model turns and tool calls, and
// its MCP helper (mcpTools from @anthropic-ai/sdk/helpers/beta/mcp) turns
// the tools of MCP servers, reached with the MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk), into runnable tools. The model is reached
// through an Anthropic base URL (the scripted testdata/modelserver behind
// `witness proxy --listen`); one MCP server over stdio (a command: `witness
// proxy --out DIR -- node server-filesystem ROOT`) and one over Streamable
// HTTP (a URL: `witness proxy --listen` in front of server-everything).
//
// Usage: node anthropic-toolrunner.mjs --model-url URL --mcp-url URL --prompt TEXT -- CMD [ARGS...]
// Prints {"final": TEXT, "tools": [NAME...]} on stdout (the final answer
// and the tool calls the model asked for, in order); exit 0 when the run
// ended with a final answer, 1 otherwise. The stdio server inherits this
// process's environment. Launched with node, never npx.
import { createRequire } from "node:module";
import { parseArgs } from "./args.mjs";

// The packages live in testdata/peers/node_modules.
const require = createRequire(new URL("../peers/package.json", import.meta.url));
const { default: Anthropic } = require("@anthropic-ai/sdk");
const { mcpTools } = require("@anthropic-ai/sdk/helpers/beta/mcp");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

// The same instructions as the other agent (testdata/agents/openai-agents.mjs).
const instructions = "You are an assistant that reads the user's files and does what the user asks.";

const opts = parseArgs("anthropic-toolrunner.mjs", process.argv.slice(2));
const fs = new Client({ name: "anthropic-toolrunner", version: "1.0.0" }, { capabilities: {} });
const everything = new Client({ name: "anthropic-toolrunner", version: "1.0.0" }, { capabilities: {} });
const ran = [];
let code = 1;
try {
  await fs.connect(new StdioClientTransport({ command: opts.cmd[0], args: opts.cmd.slice(1), env: { ...process.env }, stderr: "inherit" }));
  await everything.connect(new StreamableHTTPClientTransport(new URL(opts.mcpURL)));
  const fsTools = (await fs.listTools()).tools.filter((t) => ["read_text_file", "write_file"].includes(t.name));
  const evTools = (await everything.listTools()).tools.filter((t) => t.name === "echo");
  const client = new Anthropic({ baseURL: opts.modelURL, apiKey: "sk-ant-witness-not-a-key", maxRetries: 0 });
  const runner = client.beta.messages.toolRunner({
    model: "claude-sonnet-4-6",
    max_tokens: 1024,
    system: instructions,
    messages: [{ role: "user", content: opts.prompt }],
    tools: [...mcpTools(fsTools, fs), ...mcpTools(evTools, everything)],
    max_iterations: 8,
  });
  let last = null;
  for await (const message of runner) {
    last = message;
    for (const block of message.content) {
      if (block.type === "tool_use") ran.push(block.name);
    }
  }
  const final = last ? last.content.filter((b) => b.type === "text").map((b) => b.text).join("") : "";
  process.stdout.write(JSON.stringify({ final, tools: ran }) + "\n");
  if (final !== "") code = 0;
} catch (e) {
  process.stderr.write(`anthropic-toolrunner: ${e && e.stack ? e.stack : e}\n`);
} finally {
  await everything.close().catch(() => {});
  await fs.close().catch(() => {});
}
process.exit(code);
