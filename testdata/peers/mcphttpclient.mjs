// mcphttpclient runs a fixed MCP session against an HTTP MCP server with
// the TypeScript SDK's client transports and prints, one JSON line per
// step, what the SDK returned, for the witness's comparison of a session
// run direct with the same session run through `witness proxy --listen`
// or `witness serve --listen`.
//
// Usage: node mcphttpclient.mjs <url> <streamable|sse> [steps]
// ($MCPHTTPCLIENT_HEADERS: a JSON object of headers sent with every request)
// Each line is {"step":..., "result":...} or {"step":..., "error":...}.
// Values that differ from run to run (the session id) are not printed.
// Never run through npx.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";

const [url, mode, stepsArg] = process.argv.slice(2);
const steps = (stepsArg || "tools,echo,sum,resources,read,prompts,prompt,close").split(",");
// $MCPHTTPCLIENT_HEADERS, a JSON object, adds headers to every request
// (the redaction test's canaries)
const requestInit = { headers: JSON.parse(process.env.MCPHTTPCLIENT_HEADERS || "{}") };
const transport = mode === "sse" ? new SSEClientTransport(new URL(url), { requestInit }) : new StreamableHTTPClientTransport(new URL(url), { requestInit });
const client = new Client({ name: "witness-mcphttpclient", version: "1.0.0" }, { capabilities: {} });

function out(step, v) {
  process.stdout.write(JSON.stringify({ step, ...v }) + "\n");
}

async function run(step, f) {
  try {
    out(step, { result: await f() });
  } catch (e) {
    out(step, { error: { code: e.code ?? null, message: String(e.message) } });
  }
}

await run("connect", async () => {
  await client.connect(transport);
  return { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
});
for (const step of steps) {
  switch (step) {
    case "tools":
      await run(step, () => client.listTools());
      break;
    case "echo":
      await run(step, () => client.callTool({ name: "echo", arguments: { message: "hello through the witness" } }));
      break;
    case "sum":
      await run(step, () => client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } }));
      break;
    case "resources":
      await run(step, () => client.listResources());
      break;
    case "read":
      await run(step, async () => {
        const list = await client.listResources();
        return client.readResource({ uri: list.resources[0].uri });
      });
      break;
    case "prompts":
      await run(step, () => client.listPrompts());
      break;
    case "prompt":
      await run(step, async () => {
        const list = await client.listPrompts();
        return client.getPrompt({ name: list.prompts[0].name, arguments: {} });
      });
      break;
    case "missing":
      await run(step, () => client.callTool({ name: "no-such-tool", arguments: {} }));
      break;
    case "close":
      await run(step, async () => {
        if (mode !== "sse") await transport.terminateSession();
        return {};
      });
      break;
  }
}
await client.close();
