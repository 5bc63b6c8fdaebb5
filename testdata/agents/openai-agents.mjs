// openai-agents runs one real agent built with the pinned @openai/agents
// SDK (testdata/peers): a model reached through an OpenAI-compatible base
// URL (the scripted testdata/modelserver behind `witness proxy --listen`),
// and two MCP servers: one over stdio (a command: `witness proxy --out DIR
// -- node server-filesystem ROOT`) and one over Streamable HTTP (a URL:
// `witness proxy --listen` in front of server-everything). The SDK does
// everything a production agent does: it lists the servers' tools, offers
// them to the model (OpenAI Responses API), runs the tool calls the model
// asks for on the right server and sends the results back, until the model
// answers in text.
//
// Usage: node openai-agents.mjs --model-url URL --mcp-url URL --prompt TEXT -- CMD [ARGS...]
// Prints {"final": TEXT, "tools": [NAME...]} on stdout (the final answer
// and the tool calls the agent ran, in order); exit 0 when the run ended
// with a final answer, 1 otherwise. The stdio server inherits this
// process's environment (ATW_WITNESS_TS, WITNESS_KEYRING). Launched with
// node, never npx.
import { createRequire } from "node:module";
import { parseArgs } from "./args.mjs";

// The packages live in testdata/peers/node_modules.
const require = createRequire(new URL("../peers/package.json", import.meta.url));
const { Agent, run, MCPServerStdio, MCPServerStreamableHttp, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } = require("@openai/agents");
const { default: OpenAI } = require("openai");

const opts = parseArgs("openai-agents.mjs", process.argv.slice(2));
setTracingDisabled(true); // no export to api.openai.com
setOpenAIAPI("responses");
setDefaultOpenAIClient(new OpenAI({ baseURL: opts.modelURL, apiKey: "sk-witness-not-a-key", maxRetries: 0 }));

const fs = new MCPServerStdio({
  name: "filesystem",
  command: opts.cmd[0],
  args: opts.cmd.slice(1),
  env: { ...process.env },
  cacheToolsList: true,
  toolFilter: { allowedToolNames: ["read_text_file", "write_file"] },
  // The SDK's default (5s) also bounds its server/discover probe of a
  // freshly started server; on a loaded machine node needs longer to start
  // it, the probe times out and the session fails.
  clientSessionTimeoutSeconds: 60,
});
const everything = new MCPServerStreamableHttp({
  name: "everything",
  url: opts.mcpURL,
  cacheToolsList: true,
  toolFilter: { allowedToolNames: ["echo"] },
  clientSessionTimeoutSeconds: 60,
});

const ran = [];
let code = 1;
try {
  await fs.connect();
  await everything.connect();
  const agent = new Agent({
    name: "inbox-assistant",
    model: "gpt-4o",
    instructions: "You are an assistant that reads the user's files and does what the user asks.",
    mcpServers: [fs, everything],
  });
  const result = await run(agent, opts.prompt, { maxTurns: 8 });
  for (const item of result.newItems) {
    if (item.type === "tool_call_item") ran.push(item.rawItem.name);
  }
  process.stdout.write(JSON.stringify({ final: result.finalOutput ?? null, tools: ran }) + "\n");
  if (typeof result.finalOutput === "string" && result.finalOutput !== "") code = 0;
} catch (e) {
  process.stderr.write(`openai-agents: ${e && e.stack ? e.stack : e}\n`);
} finally {
  await everything.close().catch(() => {});
  await fs.close().catch(() => {});
}
process.exit(code);
