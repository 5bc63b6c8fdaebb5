// mcphost is a small MCP host built on the official TypeScript SDK (Client +
// StdioClientTransport) for the witness's real-peer tests (issue 11). It
// declares the sampling, elicitation (form and URL) and roots capabilities,
// answers those server requests deterministically, runs a script of calls,
// and prints every byte it received from the server, raw, on stdout: the
// server's JSON-RPC lines exactly as they arrived (one message a line).
//
// Usage:
//   node mcphost.mjs --script FILE [--sent FILE] [--status FILE] [--root DIR]...
//        [--elicit KEY=VALUE]... [--elicit-action accept|decline|cancel]
//        [--default-env] -- SERVER-COMMAND [ARGS...]
//
// Answers:
//   sampling/createMessage  {"model":"witness-test-model","role":"assistant",
//                           "content":{"type":"text","text":"echo: <the text of
//                           the last message>"},"stopReason":"endTurn"}
//   elicitation/create      form mode: {"action":A,"content":{KEY:VALUE...}}
//                           (values are strings); URL mode: {"action":A}
//   roots/list              {"roots":[{"uri":"file://DIR","name":basename}...]}
//
// The script is a JSON array of steps, run in order, each awaited:
//   {"call":"resources/read","params":{...},"error":true}
//       a request sent with the SDK's own method for it (listResources,
//       readResource, callTool, ...); "error": true says the server is
//       expected to answer with an error (anything else fails the host);
//       "progress": true asks for progress notifications (the SDK then
//       sends params._meta.progressToken)
//   {"waitFor":"roots/list","count":1}
//       wait until COUNT messages with that method have arrived from the
//       server and, for a request, until the host has sent its answer
//   {"notify":"notifications/roots/list_changed"}
//       send a notification
//
// --default-env starts the server with the SDK's default environment only
// (getDefaultEnvironment(): HOME, LOGNAME, PATH, SHELL, TERM, USER on POSIX),
// as a host that passes no env does; without it the server gets the host's
// whole environment.
// --sent FILE receives the exact bytes the host wrote to the server;
// --status FILE how the server process ended ("exit N" or "signal NAME"),
// once the host has closed it the SDK's way (stdin closed, SIGTERM after 2 s).
// The exit code is 0 when every step went as scripted, 1 otherwise.
// Launched with node, never npx.
import { writeFileSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const sep = process.argv.indexOf("--");
if (sep < 0 || sep === process.argv.length - 1) {
  console.error("mcphost: usage: node mcphost.mjs --script FILE [options] -- SERVER-COMMAND [ARGS...]");
  process.exit(2);
}
const { values: opts } = parseArgs({
  args: process.argv.slice(2, sep),
  options: {
    script: { type: "string" },
    sent: { type: "string" },
    status: { type: "string" },
    root: { type: "string", multiple: true, default: [] },
    elicit: { type: "string", multiple: true, default: [] },
    "elicit-action": { type: "string", default: "accept" },
    "default-env": { type: "boolean", default: false },
  },
});
const server = process.argv.slice(sep + 1);
const steps = JSON.parse(readFileSync(opts.script, "utf8"));

const elicitContent = {};
for (const kv of opts.elicit) {
  const i = kv.indexOf("=");
  if (i <= 0) {
    console.error(`mcphost: --elicit ${JSON.stringify(kv)}: want KEY=VALUE`);
    process.exit(2);
  }
  elicitContent[kv.slice(0, i)] = kv.slice(i + 1);
}

// Tally of what arrived from the server, by method, and of the server
// requests the host has answered, for the waitFor steps.
const received = new Map(); // method -> count
const openServerRequests = new Map(); // JSON id -> method
const waiters = [];
function settle() {
  for (let i = waiters.length - 1; i >= 0; i--) {
    const w = waiters[i];
    const unanswered = [...openServerRequests.values()].some((m) => m === w.method);
    if ((received.get(w.method) ?? 0) >= w.count && !unanswered) {
      waiters.splice(i, 1);
      w.resolve();
    }
  }
}

// TappedTransport is the SDK's stdio transport with two taps: every chunk
// the server writes is copied to stdout before the SDK parses it (so the
// host reports the bytes, not a re-serialisation), and every message the
// host sends is recorded as the SDK serialises it.
class TappedTransport extends StdioClientTransport {
  constructor(params) {
    super(params);
    this.sentBytes = [];
    this.pending = Buffer.alloc(0);
  }
  async start() {
    await super.start();
    this.exited = new Promise((resolve) =>
      this._process.once("exit", (code, signal) => resolve(signal ? `signal ${signal}` : `exit ${code}`)),
    );
    // _process is the SDK's spawned child; a second 'data' listener sees
    // the same chunks as the SDK's own, in the same order.
    this._process.stdout.on("data", (chunk) => {
      process.stdout.write(chunk);
      this.pending = Buffer.concat([this.pending, chunk]);
      for (let nl = this.pending.indexOf(10); nl >= 0; nl = this.pending.indexOf(10)) {
        const line = this.pending.subarray(0, nl).toString("utf8");
        this.pending = this.pending.subarray(nl + 1);
        let m;
        try {
          m = JSON.parse(line);
        } catch {
          continue; // the SDK reports it; the bytes are already on stdout
        }
        if (m && typeof m.method === "string") {
          received.set(m.method, (received.get(m.method) ?? 0) + 1);
          if ("id" in m) openServerRequests.set(JSON.stringify(m.id), m.method);
        }
      }
      settle();
    });
  }
  async send(message) {
    this.sentBytes.push(serializeMessage(message));
    await super.send(message);
    if (!("method" in message) && "id" in message) {
      openServerRequests.delete(JSON.stringify(message.id));
      settle();
    }
  }
}

const transport = new TappedTransport({
  command: server[0],
  args: server.slice(1),
  // no env: the SDK passes only getDefaultEnvironment()
  env: opts["default-env"] ? undefined : { ...process.env },
  stderr: "inherit",
});
const client = new Client(
  { name: "witness-mcphost", version: "0.0.1" },
  {
    capabilities: {
      sampling: {},
      elicitation: { form: {}, url: {} },
      roots: { listChanged: true },
    },
  },
);

client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  const last = req.params.messages[req.params.messages.length - 1];
  const text = last && last.content && last.content.type === "text" ? last.content.text : "";
  return {
    model: "witness-test-model",
    role: "assistant",
    content: { type: "text", text: `echo: ${text}` },
    stopReason: "endTurn",
  };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const action = opts["elicit-action"];
  if (req.params.mode === "url" || action !== "accept") return { action };
  return { action, content: { ...elicitContent } };
});
client.setRequestHandler(ListRootsRequestSchema, async () => ({
  roots: opts.root.map((dir) => ({ uri: pathToFileURL(dir).href, name: basename(dir) })),
}));

// call sends one request with the SDK's method for it.
function call(method, params, progress) {
  const options = progress ? { onprogress: () => {} } : undefined;
  switch (method) {
    case "tools/list":
      return client.listTools(params, options);
    case "tools/call":
      return client.callTool(params, undefined, options);
    case "resources/list":
      return client.listResources(params);
    case "resources/templates/list":
      return client.listResourceTemplates(params);
    case "resources/read":
      return client.readResource(params);
    case "resources/subscribe":
      return client.subscribeResource(params);
    case "resources/unsubscribe":
      return client.unsubscribeResource(params);
    case "prompts/list":
      return client.listPrompts(params);
    case "prompts/get":
      return client.getPrompt(params);
    case "completion/complete":
      return client.complete(params);
    case "logging/setLevel":
      return client.setLoggingLevel(params.level);
    case "ping":
      return client.ping();
    default:
      throw new Error(`mcphost: no SDK method for ${method}`);
  }
}

let failed = false;
try {
  await client.connect(transport);
  for (const [i, step] of steps.entries()) {
    if (step.waitFor) {
      await new Promise((resolve) => {
        waiters.push({ method: step.waitFor, count: step.count ?? 1, resolve });
        settle();
      });
    } else if (step.notify) {
      await client.notification({ method: step.notify, ...(step.params ? { params: step.params } : {}) });
    } else if (step.call) {
      let err = null;
      try {
        await call(step.call, step.params ?? {}, step.progress);
      } catch (e) {
        err = e;
      }
      if (!!err !== !!step.error) {
        failed = true;
        console.error(`mcphost: step ${i} ${step.call}: ${err ? `error ${err.message}` : "succeeded"}, want ${step.error ? "an error" : "success"}`);
      }
    } else {
      throw new Error(`step ${i}: want call, waitFor or notify`);
    }
  }
} catch (e) {
  failed = true;
  console.error(`mcphost: ${e && e.stack ? e.stack : e}`);
} finally {
  await client.close();
  if (opts.sent) writeFileSync(opts.sent, transport.sentBytes.join(""));
  if (opts.status) {
    // close() ends with SIGKILL when the server outlived SIGTERM, so the
    // exit always comes
    writeFileSync(opts.status, transport.exited ? await transport.exited : "never started");
  }
}
process.exitCode = failed ? 1 : 0;
