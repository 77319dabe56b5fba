// Fake model endpoint (Anthropic Messages, OpenAI Responses, Gemini) on 127.0.0.1:47319
// and a minimal streamable-HTTP MCP server (one tool, list_agents) on 127.0.0.1:47320/mcp,
// used by TestCaptureStreams to capture real CLI output (node fake-model.mjs; no dependencies).
// Each model answers by counting the tool results already in the request: a shell command,
// a file write, the MCP call, then a final answer. Requests are logged to $FAKE_LOG.
import http from "node:http";
import fs from "node:fs";
const LOG = process.env.FAKE_LOG || "/tmp/fake-model-log";
fs.mkdirSync(LOG, { recursive: true });
let n = 0;
const WORKDIR_FILE = process.env.FAKE_WORKDIR_FILE || "/tmp/fake-model-workdir";
const WORKDIR = () => fs.readFileSync(WORKDIR_FILE, "utf8").trim();
const CODEX_SCRIPT = [
 {"text":"I'll look at the folder first.","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"ls -la\",\"workdir\":\"$WD\"}"}},
 {"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"exec_command","arguments":"{\"cmd\":\"apply_patch <<'EOF'\\n*** Begin Patch\\n*** Add File: notes.txt\\n+hello from the worker\\n*** End Patch\\nEOF\\n\",\"workdir\":\"$WD\"}"}},
 {"item":{"type":"function_call","id":"fc_3","call_id":"call_3","namespace":"mcp__crosschat","name":"list_agents","arguments":"{}"}},
 {"item":{"type":"function_call","id":"fc_4","call_id":"call_4","name":"exec_command","arguments":"{\"cmd\":\"false\",\"workdir\":\"$WD\"}"}},
 {"text":"Done: listed the folder, wrote notes.txt and checked the relay's agents."}
];
function body(req) { return new Promise(r => { let b = ""; req.on("data", c => b += c); req.on("end", () => r(b)); }); }
function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [ev, data] of events) res.write((ev ? `event: ${ev}\n` : "") + `data: ${JSON.stringify(data)}\n\n`);
  res.end();
}
// ---------- Anthropic ----------
function anthropic(req, res, j) {
  const tools = (j.tools || []).map(t => t.name);
  let results = 0;
  for (const m of j.messages || []) if (Array.isArray(m.content)) for (const b of m.content) if (b.type === "tool_result") results++;
  const wd = WORKDIR();
  const script = [
    { text: "I'll look at the folder first.", tool: "Bash", input: { command: "ls -la", description: "List files" } },
    { tool: "Write", input: { file_path: wd + "/notes.txt", content: "hello from the worker\n" } },
    { tool: tools.find(t => t.startsWith("mcp__") && t.endsWith("__list_agents")) || "mcp__crosschat-run__list_agents", input: {} },
    { tool: "Bash", input: { command: "curl -s http://example.com", description: "Fetch a page" } },
    { text: "Done: listed the folder, wrote notes.txt and checked the relay's agents." },
  ];
  if (!tools.includes("Bash")) {
    const msg = { id: "msg_side", type: "message", role: "assistant", model: j.model, content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } };
    if (!j.stream) { res.writeHead(200, { "content-type": "application/json" }); return res.end(JSON.stringify(msg)); }
  }
  const step = tools.includes("Bash") ? script[Math.min(results, script.length - 1)] : { text: "ok" };
  const blocks = [];
  if (step.text) blocks.push({ type: "text", text: step.text });
  if (step.tool) blocks.push({ type: "tool_use", id: "toolu_0" + (results + 1), name: step.tool, input: step.input });
  const ev = [["message_start", { type: "message_start", message: { id: "msg_" + results, type: "message", role: "assistant", model: j.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }]];
  blocks.forEach((b, i) => {
    if (b.type === "text") {
      ev.push(["content_block_start", { type: "content_block_start", index: i, content_block: { type: "text", text: "" } }]);
      ev.push(["content_block_delta", { type: "content_block_delta", index: i, delta: { type: "text_delta", text: b.text } }]);
    } else {
      ev.push(["content_block_start", { type: "content_block_start", index: i, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } }]);
      ev.push(["content_block_delta", { type: "content_block_delta", index: i, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } }]);
    }
    ev.push(["content_block_stop", { type: "content_block_stop", index: i }]);
  });
  ev.push(["message_delta", { type: "message_delta", delta: { stop_reason: step.tool ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: 5 } }]);
  ev.push(["message_stop", { type: "message_stop" }]);
  sse(res, ev);
}
// ---------- OpenAI Responses ----------
function responses(req, res, j) {
  let results = 0;
  for (const it of j.input || []) if (/_output$/.test(it.type || "")) results++;
  const tools = j.tools || [];
  const wd = WORKDIR();
  const names = tools.map(t => t.name || t.type);
  const script = CODEX_SCRIPT;
  const step = script[Math.min(results, script.length - 1)];
  const items = [];
  if (step.text) items.push({ type: "message", role: "assistant", id: "msg_" + results, content: [{ type: "output_text", text: step.text, annotations: [] }] });
  if (step.item) items.push(JSON.parse(JSON.stringify(step.item).replaceAll("$WD", wd)));
  const ev = [["response.created", { type: "response.created", response: { id: "resp_" + results } }]];
  items.forEach((it, i) => {
    ev.push(["response.output_item.added", { type: "response.output_item.added", output_index: i, item: it }]);
    ev.push(["response.output_item.done", { type: "response.output_item.done", output_index: i, item: it }]);
  });
  ev.push(["response.completed", { type: "response.completed", response: { id: "resp_" + results, usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } } }]);
  sse(res, ev);
}
// ---------- Gemini ----------
function gemini(req, res, j, url) {
  let results = 0;
  for (const c of j.contents || []) for (const p of c.parts || []) if (p.functionResponse) results++;
  const decls = [];
  for (const t of j.tools || []) for (const d of t.functionDeclarations || []) decls.push(d.name);
  const wd = WORKDIR();
  if (!url.includes("streamGenerateContent")) {
    const json = j.generationConfig && /json/.test(j.generationConfig.responseMimeType || "");
    const text = json ? JSON.stringify({ reasoning: "simple task", model_choice: "flash" }) : "ok";
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1, totalTokenCount: 6 } }));
  }
  const mcp = decls.find(d => d.startsWith("mcp_") && d.endsWith("list_agents"));
  const script = [
    { text: "I'll look at the folder first.", call: { name: "run_shell_command", args: { command: "ls -la", description: "List files" } } },
    { call: { name: "write_file", args: { file_path: wd + "/notes.txt", content: "hello from the worker\n" } } },
    mcp ? { call: { name: mcp, args: {} } } : null,
    { text: "Done: listed the folder, wrote notes.txt and checked the relay's agents." },
  ].filter(Boolean);
  const step = script[Math.min(results, script.length - 1)];
  const chunks = [];
  if (step.text) {
    const half = Math.ceil(step.text.length / 2);
    chunks.push([{ text: step.text.slice(0, half) }], [{ text: step.text.slice(half) }]);
  }
  if (step.call) chunks.push([{ functionCall: step.call }]);
  res.writeHead(200, { "content-type": "text/event-stream" });
  chunks.forEach((parts, i) => {
    const last = i === chunks.length - 1;
    const d = { candidates: [{ content: { role: "model", parts }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 }, modelVersion: "gemini-fake" };
    res.write(`data: ${JSON.stringify(d)}\n\n`);
  });
  res.end();
}
http.createServer(async (req, res) => {
  const b = await body(req);
  const id = ++n;
  fs.writeFileSync(`${LOG}/${String(id).padStart(3, "0")}-${req.method}-${req.url.replace(/[^a-z0-9]+/gi, "_").slice(0, 80)}.json`, b);
  let j = {};
  try { j = b ? JSON.parse(b) : {}; } catch {}
  if (req.method === "HEAD" || req.method === "GET") { res.writeHead(200); return res.end(); }
  if (req.url.startsWith("/v1/messages/count_tokens")) { res.writeHead(200, { "content-type": "application/json" }); return res.end(JSON.stringify({ input_tokens: 10 })); }
  if (req.url.startsWith("/v1/messages")) return anthropic(req, res, j);
  if (req.url.startsWith("/v1/responses")) return responses(req, res, j);
  if (/generatecontent/i.test(req.url)) return gemini(req, res, j, req.url);
  if (req.url.includes("countTokens")) { res.writeHead(200, { "content-type": "application/json" }); return res.end(JSON.stringify({ totalTokens: 10 })); }
  res.writeHead(404); res.end("{}");
}).listen(47319, "127.0.0.1");
// ---------- minimal MCP (streamable HTTP, JSON responses) ----------
http.createServer(async (req, res) => {
  const b = await body(req);
  fs.appendFileSync(`${LOG}/mcp.log`, `${req.method} ${req.headers.authorization || "-"} ${b}\n`);
  if (req.method !== "POST") { res.writeHead(405); return res.end(); }
  if (!/^Bearer (tok-|ccr_)/.test(req.headers.authorization || "")) { res.writeHead(401, { "www-authenticate": 'Bearer realm="crosschat"' }); return res.end('{"error":"unauthorized"}'); }
  let j; try { j = JSON.parse(b); } catch { res.writeHead(400); return res.end(); }
  if (j.id === undefined) { res.writeHead(202); return res.end(); }
  const reply = r => { res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" }); res.end(JSON.stringify({ jsonrpc: "2.0", id: j.id, ...r })); };
  const ann = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
  switch (j.method) {
    case "initialize": return reply({ result: { protocolVersion: j.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "crosschat-fake", version: "0.0.1" } } });
    case "tools/list": return reply({ result: { tools: [{ name: "list_agents", description: "List the agents on the relay.", inputSchema: { type: "object", properties: {} }, annotations: ann }] } });
    case "tools/call": { const s = { agents: [{ slug: "builder", displayName: "Builder", availability: "online" }] }; return reply({ result: { content: [{ type: "text", text: JSON.stringify(s) }], structuredContent: s } }); }
    case "ping": return reply({ result: {} });
    default: return reply({ result: {} });
  }
}).listen(47320, "127.0.0.1");
