// Drives the MCP Inspector CLI (pinned 2.12.0) against a running relay.
// Env: MCP_URL, ALICE_TOKEN. Prints one line per check; exits 1 on failure.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { TOOLS, assert, check, deadline, eq, finish, need, short } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, "node_modules", ".bin", "mcp-inspector");
const url = need("MCP_URL");
const alice = need("ALICE_TOKEN");
// The Inspector keeps a catalog and OAuth state under $HOME/.mcp-inspector:
// give it a throwaway home so nothing of the machine's is read or written.
const home = mkdtempSync(join(tmpdir(), "ccr-inspector-"));
process.on("exit", () => rmSync(home, { recursive: true, force: true }));

deadline(120_000, "inspector");

/** inspect runs one CLI call and returns {code, json, stdout, stderr}. */
function inspect(token, ...args) {
  const argv = ["--cli", url, "--transport", "http", "--format", "json", "-q",
    "--stored-auth-only", "--connect-timeout", "15000",
    "--header", `Authorization: Bearer ${token}`, ...args];
  const r = spawnSync(bin, argv, {
    encoding: "utf8",
    timeout: 45_000,
    env: { ...process.env, HOME: home, NO_COLOR: "1", NO_UPDATE_NOTIFIER: "1" },
  });
  let json;
  try { json = JSON.parse(r.stdout); } catch { /* left undefined */ }
  return { code: r.status, signal: r.signal, json, stdout: r.stdout, stderr: r.stderr, error: r.error };
}

function ok(r, what) {
  assert(!r.error, `${what}: ${r.error}`);
  assert(r.code === 0, `${what}: exit ${r.code ?? r.signal}; stderr: ${short(r.stderr)}; stdout: ${short(r.stdout)}`);
  assert(r.json?.result, `${what}: no {"result": …} on stdout: ${short(r.stdout)}`);
  return r.json.result;
}

const list = inspect(alice, "--method", "tools/list");
let tools = [];
await check("inspector tools/list lists exactly the 14 protocol tools", () => {
  tools = ok(list, "tools/list").tools ?? [];
  eq(tools.map((t) => t.name).sort(), [...TOOLS].sort(), "tool names");
});

await check("inspector tools/list: every tool sets all four annotations", () => {
  assert(tools.length > 0, "no tools");
  const bad = tools.filter((t) => ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]
    .some((k) => typeof t.annotations?.[k] !== "boolean"));
  assert(bad.length === 0, `missing annotations on: ${bad.map((t) => `${t.name} ${short(t.annotations ?? {})}`).join(", ")}`);
});

await check("inspector tools/list: every tool has an input schema of type object", () => {
  const bad = tools.filter((t) => t.inputSchema?.type !== "object");
  assert(bad.length === 0, `bad inputSchema on: ${bad.map((t) => t.name).join(", ")}`);
});

await check("inspector tools/call whoami shows alice", () => {
  const res = ok(inspect(alice, "--method", "tools/call", "--tool-name", "whoami"), "tools/call whoami");
  assert(!res.isError, `isError result: ${short(res)}`);
  const sc = res.structuredContent;
  assert(sc, `no structuredContent: ${short(res)}`);
  eq(sc.kind, "agent", "structuredContent.kind");
  eq(sc.agent?.slug, "alice", "structuredContent.agent.slug");
  const text = res.content?.find((c) => c.type === "text")?.text;
  assert(text, "no text content");
  eq(JSON.parse(text).agent?.slug, "alice", "text JSON agent.slug");
});

await check("inspector with a wrong token fails (no result)", () => {
  const r = inspect("cca_not-a-real-token", "--method", "tools/list");
  assert(r.code !== 0, `exit 0 with a wrong token: ${short(r.stdout)}`);
  assert(!r.json?.result, `got a result with a wrong token: ${short(r.stdout)}`);
});

finish("inspector");
