// agent-test.cjs: the agent's own test suite in the example CI job
// (docs/ci.md). A real agent's tests would live in its repository; this one
// is the smallest that talks to all three peers an agent has:
//
//   1. an MCP server over stdio (the command after "--"),
//   2. an MCP server over Streamable HTTP (MCP_URL; skipped when unset),
//   3. the model API (MODEL_URL, an OpenAI-compatible base URL),
//
// using the official MCP TypeScript SDK and the openai SDK. It runs the
// same way against the real peers (through `witness proxy`, to record the
// cassettes) and against `witness serve` (to replay them). It prints one
// "ok"/"not ok" line per test and exits 1 if any failed.
//
// AGENT_TEXT changes what the agent sends (the tool's argument and the
// user message): the example's test uses it to show that drift is caught.
//
// Usage: MODEL_URL=... MCP_URL=... node agent-test.cjs -- SERVER [ARGS...]
// (the SDKs are found through NODE_PATH).
"use strict";
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const OpenAI = require("openai");

const text = process.env.AGENT_TEXT || "Ada";
let failed = 0;
let n = 0;

async function test(name, fn, skip) {
  n++;
  if (skip) {
    console.log(`ok ${n} - ${name} # SKIP ${skip}`);
    return;
  }
  try {
    await fn();
    console.log(`ok ${n} - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok ${n} - ${name}: ${e && e.message ? e.message : e}`);
  }
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

// greet calls the server's greet tool on a connected client and checks
// the answer names the person.
async function greet(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  check(names.includes("greet"), `no greet tool in ${names.join(", ")}`);
  const res = await client.callTool({ name: "greet", arguments: { name: text } });
  const out = (res.content || []).map((c) => c.text || "").join("");
  check(!res.isError && out.includes(text), `greet answered ${JSON.stringify(res)}`);
}

async function main() {
  const sep = process.argv.indexOf("--");
  const server = sep >= 0 ? process.argv.slice(sep + 1) : [];

  await test("MCP over stdio: greet", async () => {
    check(server.length > 0, "no server command after --");
    const client = new Client({ name: "agent-test", version: "1.0.0" });
    await client.connect(new StdioClientTransport({ command: server[0], args: server.slice(1), stderr: "inherit" }));
    try {
      await greet(client);
    } finally {
      await client.close();
    }
  });

  await test("MCP over Streamable HTTP: greet", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL));
    const client = new Client({ name: "agent-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      await greet(client);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  }, process.env.MCP_URL ? "" : "MCP_URL is not set (recording: the stdio cassette serves both)");

  await test("model API: chat completion", async () => {
    check(process.env.MODEL_URL, "MODEL_URL is not set");
    const openai = new OpenAI({ baseURL: process.env.MODEL_URL + "/v1", apiKey: process.env.OPENAI_API_KEY || "sk-replay", maxRetries: 0 });
    const res = await openai.chat.completions.create({
      model: "gpt-4o-2024-08-06",
      messages: [{ role: "user", content: `scenario: chat-text. Weather for ${text}?` }],
    });
    const said = res.choices[0].message.content || "";
    check(said.includes("Paris"), `the model said ${JSON.stringify(said)}`);
  });

  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(`not ok - ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
