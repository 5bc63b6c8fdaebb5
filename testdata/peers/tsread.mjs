// tsread reads JSON-RPC wire lines the way a server built on the official
// TypeScript MCP SDK does (the stdio ReadBuffer: split on "\n", drop one
// trailing "\r", JSON.parse, JSONRPCMessageSchema; CallToolRequestSchema for
// tools/call), and prints what such a server would act on. The witness's
// differential test (mcp) feeds it lines and compares its own reading.
//
// Input: one JSON string per line, the standard base64 of one wire line
// (without its "\n"). Output: one JSON object per input line:
//   {"ok":false,"error":"..."}  the SDK refuses the line
//   {"ok":true,"kind":"request|notification|response","method":M,
//    "id":"<JSON.stringify of the id as the SDK holds it>",
//    "name":N,"arguments":"<JSON.stringify of params.arguments>"}
// Launched with node, never npx.
import { createInterface } from "node:readline";
import { deserializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
for await (const l of rl) {
  if (l === "") continue;
  const bytes = Buffer.from(JSON.parse(l), "base64");
  out.push(JSON.stringify(read(bytes)));
  if (out.length >= 256) {
    process.stdout.write(out.join("\n") + "\n");
    out.length = 0;
  }
}
if (out.length) process.stdout.write(out.join("\n") + "\n");

function read(bytes) {
  // what ReadBuffer.readMessage does with one line
  const line = bytes.toString("utf8").replace(/\r$/, "");
  let msg;
  try {
    msg = deserializeMessage(line);
  } catch (e) {
    return { ok: false, error: String(e && e.message ? e.message : e).slice(0, 200) };
  }
  const r = { ok: true };
  if ("method" in msg) {
    r.kind = "id" in msg ? "request" : "notification";
    r.method = msg.method;
  } else {
    r.kind = "response";
  }
  if ("id" in msg) r.id = JSON.stringify(msg.id);
  if (r.method === "tools/call") {
    const p = CallToolRequestSchema.safeParse(msg);
    if (!p.success) return { ok: false, error: "CallToolRequestSchema: " + p.error.message.slice(0, 200) };
    r.name = p.data.params.name;
    r.arguments = JSON.stringify(p.data.params.arguments ?? null);
  }
  return r;
}
