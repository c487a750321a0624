// Renders one prompt per input line with the real Priompt package and prints the result.
//
// Input (one JSON object per line):
//   {"budget": int, "system": str, "memories": [str], "turns": [[openai message]], "user": str}
// Output (one JSON object per line):
//   {"messages": [openai message], "tokenCount": int, "priorityCutoff": number}
//   or {"error": str}
//
// Layout: the system prompt and the current user message are never dropped; each retrieved
// memory is its own scope, ranked above all history in retriever order; each earlier turn
// (a user message with every assistant and tool message that followed it) is one scope, newer
// turns ranked above older ones.
"use strict";

const readline = require("readline");
const priompt = require("@impowering/priompt");
const { CL100K } = require("@impowering/priompt/dist/tokenizer");

const h = priompt.createElement;
const ALWAYS = priompt.BASE_PRIORITY;
const MEMORY_BASE = 1e6;
const HISTORY_BASE = 1e3;

function historyMessage(msg) {
  const content = typeof msg.content === "string" ? msg.content : "";
  if (msg.role === "user") {
    return h(priompt.UserMessage, {}, content);
  }
  if (msg.role === "tool") {
    return h(priompt.ToolResultMessage, { name: msg.name || "tool", to: msg.tool_call_id }, content);
  }
  if (msg.role === "assistant") {
    const props = {};
    if (Array.isArray(msg.tool_calls) && msg.tool_calls.length > 0) {
      props.toolCalls = msg.tool_calls.map((call, index) => ({
        id: call.id,
        index,
        tool: {
          type: "function",
          function: { name: call.function.name, arguments: call.function.arguments },
        },
      }));
    }
    return h(priompt.AssistantMessage, props, content);
  }
  return h(priompt.SystemMessage, {}, content);
}

function buildPrompt(req) {
  const memoryScopes = req.memories.map((text, rank) =>
    h("scope", { p: MEMORY_BASE - rank }, "\n", text),
  );
  const system = h(priompt.SystemMessage, {}, req.system, ...memoryScopes);
  const turns = req.turns.map((messages, index) =>
    h("scope", { p: HISTORY_BASE + index }, ...messages.map(historyMessage)),
  );
  const user = h(priompt.UserMessage, {}, req.user);
  return h("scope", { p: ALWAYS }, system, ...turns, user);
}

async function handle(line) {
  const req = JSON.parse(line);
  const out = await priompt.render(buildPrompt(req), {
    tokenLimit: req.budget,
    tokenizer: CL100K,
  });
  const messages = priompt.promptToOpenAIChatMessages(out.prompt).map((m) => {
    const clean = {};
    for (const [key, value] of Object.entries(m)) {
      if (value !== undefined) clean[key] = value;
    }
    return clean;
  });
  return { messages, tokenCount: out.tokenCount, priorityCutoff: out.priorityCutoff };
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let reply;
    try {
      reply = await handle(line);
    } catch (err) {
      reply = { error: String(err && err.stack ? err.stack : err) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
}

main();
