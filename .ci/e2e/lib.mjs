// Shared helpers for the end-to-end scripts: named checks that are counted,
// a hard deadline, and small assertion helpers. No test framework: each
// script prints one line per check and exits non-zero if any failed.

let passed = 0;
let failed = 0;

/** check runs fn (sync or async); a throw or a false return is a failure. */
export async function check(name, fn) {
  try {
    const ok = await fn();
    if (ok === false) throw new Error("returned false");
    passed++;
    console.log(`ok   ${name}`);
    return true;
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err?.stack ?? err}`.split("\n").slice(0, 8).join("\n     "));
    return false;
  }
}

/** finish prints the tally and exits (1 when anything failed). */
export function finish(label) {
  console.log(`${label}: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

/** deadline aborts the whole script if it runs longer than ms. */
export function deadline(ms, label) {
  const t = setTimeout(() => {
    console.log(`FAIL ${label}: deadline of ${ms} ms exceeded`);
    failed++;
    finish(label);
  }, ms);
  t.unref();
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function eq(got, want, what) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

/** need reads a required environment variable. */
export function need(name) {
  const v = process.env[name];
  if (!v) {
    console.log(`FAIL setup: environment variable ${name} is not set`);
    process.exit(2);
  }
  return v;
}

/** short renders a value for a failure message. */
export function short(v, n = 600) {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > n ? s.slice(0, n) + "…" : s;
}

/** The 14 tools of the Crosschat protocol. */
export const TOOLS = [
  "whoami", "register_agent", "list_agents", "heartbeat", "post_task", "claim_next_task",
  "renew_task_lease", "report_task", "release_task", "read_updates", "get_task",
  "cancel_task", "requeue_task", "request_changes",
];
