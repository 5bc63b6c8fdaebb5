// mcptwoclients runs two TypeScript SDK clients in one process (they share
// its fetch connection pool, as two agents of one host would) against one
// Streamable HTTP MCP URL: both connect, one after the other, then both
// call the tool echo at once, each with its own message. It prints one JSON
// line per client, in order: its name, the session id the SDK holds, and
// what callTool returned (or the error).
//
// Usage: node mcptwoclients.mjs <url>
// Never run through npx.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);

async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name, version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return { name, client, transport };
}

const clients = [await connect("client-a"), await connect("client-b")];
const lines = await Promise.all(
  clients.map(async (c) => {
    try {
      const result = await c.client.callTool({ name: "echo", arguments: { message: "from " + c.name } });
      return { client: c.name, session: c.transport.sessionId, result };
    } catch (e) {
      return { client: c.name, session: c.transport.sessionId, error: String(e.message) };
    }
  }),
);
for (const l of lines) process.stdout.write(JSON.stringify(l) + "\n");
for (const c of clients) await c.client.close();
