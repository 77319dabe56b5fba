// A task's whole round trip through the TypeScript MCP SDK, as two agents:
// alice posts to bob, bob claims, reports progress and completes, alice reads
// the change-only updates and the finished task. Also: long-poll wake-up,
// identity checks and a rejected token.
// Env: MCP_URL, ALICE_TOKEN, BOB_TOKEN. Exits 1 on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { assert, check, deadline, eq, finish, need, short } from "./lib.mjs";

const url = new URL(need("MCP_URL"));
deadline(120_000, "sdk");

async function connect(name, token) {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: `ccr-e2e-${name}`, version: "0.1.0" });
  await client.connect(transport);
  return { client, transport };
}

/** call invokes a tool and returns {res, value}: value is the structured result. */
async function call(who, name, args) {
  const res = await who.client.callTool({ name, arguments: args });
  const text = res.content?.find((c) => c.type === "text")?.text;
  let parsed;
  try { parsed = text === undefined ? undefined : JSON.parse(text); } catch { /* plain text */ }
  return { res, text, parsed, value: res.structuredContent };
}

/** ok asserts a successful tool result that carries structuredContent matching its JSON text. */
function ok(r, what) {
  assert(!r.res.isError, `${what}: error result: ${short(r.text)}`);
  assert(r.value && typeof r.value === "object", `${what}: no structuredContent: ${short(r.res)}`);
  if (r.parsed !== undefined) eq(r.parsed, r.value, `${what}: text JSON vs structuredContent`);
  return r.value;
}

/** toolError asserts an error result and returns its JSON error code. */
function toolError(r, what) {
  assert(r.res.isError === true, `${what}: expected isError, got ${short(r.res)}`);
  const body = r.parsed ?? r.value;
  assert(body && typeof body === "object", `${what}: error text is not JSON: ${short(r.text)}`);
  return body.error;
}

const s = { tag: `e2e-${process.pid}-${Date.now()}` };

await check("sdk: alice and bob connect with their bearer tokens", async () => {
  s.alice = await connect("alice", need("ALICE_TOKEN"));
  s.bob = await connect("bob", need("BOB_TOKEN"));
});
if (!s.alice || !s.bob) finish("sdk");

await check("sdk: whoami is alice / bob", async () => {
  eq(ok(await call(s.alice, "whoami", {}), "whoami alice").agent?.slug, "alice", "alice whoami");
  eq(ok(await call(s.bob, "whoami", {}), "whoami bob").agent?.slug, "bob", "bob whoami");
});

await check("sdk: alice post_task to bob → queued", async () => {
  const t = ok(await call(s.alice, "post_task", {
    recipientSlug: "bob",
    title: `Summarise the build log (${s.tag})`,
    instructions: "Read .ci/out/build.log and report the three slowest steps.",
  }), "post_task");
  eq(t.status, "queued", "status");
  eq(t.senderSlug, "alice", "senderSlug");
  eq(t.recipientSlug, "bob", "recipientSlug");
  eq(t.priority, 2, "default priority");
  assert(typeof t.id === "string" && t.id.length > 0, `no task id: ${short(t)}`);
  s.taskId = t.id;
});

await check("sdk: bob claim_next_task (waitMs 5000) gets it", async () => {
  const v = ok(await call(s.bob, "claim_next_task", { waitMs: 5000 }), "claim_next_task");
  eq(v.status, "task", "claim status");
  eq(v.task?.id, s.taskId, "claimed task id");
  eq(v.task?.status, "claimed", "task status");
  assert(v.task?.leaseExpiresAt, `no leaseExpiresAt: ${short(v.task)}`);
});

await check("sdk: bob report_task progress", async () => {
  const t = ok(await call(s.bob, "report_task", {
    taskId: s.taskId, kind: "progress", message: "Log parsed; ranking steps.",
  }), "report progress");
  eq(t.status, "claimed", "status after progress");
});

await check("sdk: bob report_task completed with a result", async () => {
  const t = ok(await call(s.bob, "report_task", {
    taskId: s.taskId, kind: "completed", message: "Done.", result: `slowest: go build, npm ci, apt (${s.tag})`,
  }), "report completed");
  eq(t.status, "completed", "status after completed");
});

await check("sdk: alice read_updates sees task-claimed, task-progress, task-completed", async () => {
  const v = ok(await call(s.alice, "read_updates", { limit: 100 }), "read_updates");
  assert(Array.isArray(v.updates), `no updates array: ${short(v)}`);
  const types = v.updates.filter((u) => u.taskId === s.taskId).map((u) => u.type);
  eq(types, ["task-claimed", "task-progress", "task-completed"], "event types for the task");
  assert(typeof v.cursor === "number", `cursor is not a number: ${short(v)}`);
  const again = ok(await call(s.alice, "read_updates", { limit: 100 }), "read_updates again");
  eq(again.updates.filter((u) => u.taskId === s.taskId).length, 0, "updates delivered once");
});

await check("sdk: alice get_task shows completed with the result", async () => {
  const t = ok(await call(s.alice, "get_task", { taskId: s.taskId }), "get_task");
  eq(t.status, "completed", "status");
  const kinds = (t.reports ?? []).map((r) => r.kind);
  eq(kinds, ["progress", "completed"], "report kinds");
  eq(t.reports[1].result, `slowest: go build, npm ci, apt (${s.tag})`, "result");
});

await check("sdk: bob posting as alice → identity_mismatch", async () => {
  const r = await call(s.bob, "post_task", {
    senderSlug: "alice", recipientSlug: "bob", title: "Impersonation", instructions: "Should be refused.",
  });
  eq(toolError(r, "post_task as alice"), "identity_mismatch", "error code");
});

await check("sdk: a waiting claim_next_task wakes when a task is posted", async () => {
  const started = Date.now();
  const waiting = call(s.bob, "claim_next_task", { waitMs: 15000 });
  await new Promise((r) => setTimeout(r, 500));
  const posted = ok(await call(s.alice, "post_task", {
    recipientSlug: "bob", title: `Wake-up probe (${s.tag})`, instructions: "Claim me while waiting.", priority: 3,
  }), "post_task (wake)");
  const v = ok(await waiting, "claim_next_task (wake)");
  const ms = Date.now() - started;
  eq(v.status, "task", "claim status");
  eq(v.task?.id, posted.id, "woken claim got the new task");
  assert(ms < 5000, `claim returned after ${ms} ms; the post should wake it at once`);
  const c = ok(await call(s.alice, "cancel_task", { taskId: posted.id, reason: "Probe finished." }), "cancel_task");
  eq(c.status, "cancelled", "cancelled");
});

await check("sdk: bob, the recipient, can read the task too", async () => {
  const t = ok(await call(s.bob, "get_task", { taskId: s.taskId }), "get_task as recipient");
  eq(t.id, s.taskId, "id");
});

await check("sdk: a wrong bearer token is refused with 401", async () => {
  let err;
  try {
    const c = await connect("mallory", "cca_not-a-real-token");
    await c.client.close();
  } catch (e) { err = e; }
  assert(err, "connect with a wrong token succeeded");
  assert(err.code === 401 || /401|unauthorized/i.test(String(err?.message)), `unexpected error: ${err}`);
});

for (const who of [s.alice, s.bob]) {
  try { await who.transport.terminateSession(); } catch { /* stateless servers may refuse DELETE */ }
  await who.client.close();
}
finish("sdk");
