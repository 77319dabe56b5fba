// What the e2e scripts share: dashboard.mjs and a11y.mjs each start a real
// `crosschat-relay serve` and drive the dashboard in Chromium; workers.mjs
// and meshtrust.mjs run inside dashboard.mjs's run. Here: the log line,
// checks and polling, a free port, MCP over plain fetch, and one run's
// set-up (arguments, throwaway folder, relay log), relays it starts and
// stops, the browser, and the PASS/FAIL ending.
import { spawn, execFileSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const FRONTEND = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const t0 = Date.now();

/** say logs msg with the seconds since the run started. */
export function say(msg) {
  console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${msg}`);
}

/** check throws msg unless cond holds. */
export function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

/** freePort asks the system for a free loopback TCP port. */
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** poll calls fn until it returns a truthy value or the deadline passes. */
export async function poll(what, fn, timeoutMs = 10000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// --- MCP over plain fetch ---------------------------------------------------
let rpcId = 0;

/** mcp calls the tool name with args as the agent with token and returns its JSON answer. */
export async function mcp(base, token, name, args) {
  const res = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "tools/call", params: { name, arguments: args } }),
  });
  const text = await res.text();
  check(res.ok, `MCP ${name}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  let msg;
  if ((res.headers.get("content-type") || "").includes("text/event-stream")) {
    const line = text.split("\n").find((l) => l.startsWith("data:"));
    check(line, `MCP ${name}: no data line in SSE answer: ${text.slice(0, 300)}`);
    msg = JSON.parse(line.slice(5).trim());
  } else msg = JSON.parse(text);
  check(!msg.error, `MCP ${name}: JSON-RPC error ${JSON.stringify(msg.error)}`);
  const out = msg.result?.content?.[0]?.text;
  check(!msg.result?.isError, `MCP ${name}: tool error: ${out}`);
  return JSON.parse(out);
}

/** adminToken is the admin token `crosschat-relay token` prints for dataDir. */
export function adminToken(bin, dataDir) {
  return execFileSync(bin, ["token", "--data-dir", dataDir], { encoding: "utf8" }).trim();
}

/** stop ends a child process: SIGTERM, and SIGKILL if it has not exited 10 s later. */
async function stop(p) {
  if (p.exitCode !== null) return;
  p.kill("SIGTERM");
  await Promise.race([new Promise((r) => p.once("exit", r)), new Promise((r) => setTimeout(r, 10000))]);
  if (p.exitCode === null) p.kill("SIGKILL");
}

/** openPage opens a 1280×800 light page that may use the clipboard of base. */
export async function openPage(browser, base) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" });
  await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  return { ctx, page: await ctx.newPage() };
}

/**
 * e2eRun sets up the run of the e2e script named script: the relay binary
 * (argv[2] or CROSSCHAT_BIN; exits 2 without one) and the screenshot folder
 * (argv[3], CROSSCHAT_SCREENSHOTS or ../.ci/out/dashboard from frontend/), a
 * throwaway folder named tmpPrefix…, and the relays' log logName in the
 * screenshot folder. It returns the run: its step (named in a failure), and
 * startRelay, launch, cleanup and finish; Ctrl-C cleans up.
 */
export function e2eRun({ script, tmpPrefix, logName }) {
  const bin = process.argv[2] || process.env.CROSSCHAT_BIN;
  if (!bin || !existsSync(bin)) {
    console.error(`usage: node e2e/${script} <relay-binary> [screenshot-dir]  (got ${bin ?? "nothing"})`);
    process.exit(2);
  }
  const out = resolve(process.argv[3] || process.env.CROSSCHAT_SCREENSHOTS || join(FRONTEND, "../.ci/out/dashboard"));
  mkdirSync(out, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), tmpPrefix));
  const logPath = join(out, logName);
  const log = createWriteStream(logPath);
  const relays = [];
  const run = {
    bin,
    out,
    tmp,
    logPath,
    step: "setup",
    browser: null,

    /**
     * startRelay starts `crosschat-relay serve` with args, its output in the
     * log, and waits until base/health answers (failing at once if it exits
     * first). name, when given, names it in the wait. cleanup stops it.
     */
    async startRelay(args, base, name) {
      const relay = spawn(bin, ["serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
      relays.push(relay);
      relay.stdout.pipe(log);
      relay.stderr.pipe(log);
      let exited = null;
      relay.once("exit", (code, sig) => (exited = `exit ${code ?? sig}`));
      await poll(
        name ? `GET /health of ${name}` : "GET /health",
        async () => {
          if (exited) throw new Error(`relay ${exited} before /health answered (log: ${logPath})`);
          return (await fetch(`${base}/health`)).ok;
        },
        30000,
      );
      return relay;
    },

    /** launch starts Chromium (CHROMIUM, default /usr/bin/chromium), headless unless E2E_HEADFUL is set. */
    async launch() {
      run.browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: !process.env.E2E_HEADFUL,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--no-first-run",
        ].filter((a) => a !== "--headless" || !process.env.E2E_HEADFUL),
      });
      return run.browser;
    },

    /** cleanup closes the browser, stops the relays (the last started first) and removes the throwaway folder. */
    async cleanup() {
      try {
        await run.browser?.close();
      } catch {}
      for (const r of [...relays].reverse()) await stop(r);
      rmSync(tmp, { recursive: true, force: true });
    },

    /**
     * finish runs main, cleans up and says PASS label; on a failure it names
     * the step, saves a screenshot of the last page as failureShot, prints
     * the last tailLines lines of the relay log, cleans up and exits 1.
     */
    finish(label, main, { failureShot, tailLines }) {
      main()
        .then(async () => {
          await run.cleanup();
          say(`PASS ${label}; screenshots in ${out}`);
        })
        .catch(async (e) => {
          console.error(`FAIL ${label} at step "${run.step}": ${e?.message ?? e}`);
          try {
            const pages = run.browser?.contexts().flatMap((c) => c.pages()) ?? [];
            if (pages.length) {
              await pages[pages.length - 1].screenshot({ path: join(out, failureShot) });
              console.error(`screenshot of the failure: ${join(out, failureShot)}`);
            }
          } catch {}
          try {
            const tail = readFileSync(logPath, "utf8").split("\n").slice(-tailLines).join("\n");
            console.error(`--- relay log (tail, ${logPath}) ---\n${tail}`);
          } catch {}
          await run.cleanup();
          process.exit(1);
        });
    },
  };
  process.on("SIGINT", async () => {
    await run.cleanup();
    process.exit(130);
  });
  return run;
}
