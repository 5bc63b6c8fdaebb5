// args.mjs is the one command-line reader of the agents in this folder:
//
//   node AGENT.mjs --model-url URL --mcp-url URL --prompt TEXT -- CMD [ARGS...]
//
// parseArgs(name, argv) returns { modelURL, mcpURL, prompt, cmd } or
// throws with the usage line of the agent called name.
export function parseArgs(name, argv) {
  const o = { cmd: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      o.cmd = argv.slice(i + 1);
      break;
    }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${a}: missing value`);
    if (a === "--model-url") o.modelURL = v;
    else if (a === "--mcp-url") o.mcpURL = v;
    else if (a === "--prompt") o.prompt = v;
    else throw new Error(`unknown flag ${a}`);
  }
  if (!o.modelURL || !o.mcpURL || !o.prompt || o.cmd.length === 0) {
    throw new Error(`usage: ${name} --model-url URL --mcp-url URL --prompt TEXT -- CMD [ARGS...]`);
  }
  return o;
}
