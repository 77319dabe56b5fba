// End to end, accessibility: the real dashboard in Debian's Chromium against a
// real `crosschat-relay serve` in a mesh (it embeds NATS), with data on screen:
// tasks in every column, an agent with a worker, a finished worker run with
// changed files. It runs
//
//   1. a keyboard-only scenario: sign in, post a task to an agent, open it,
//      create an invite and copy its message, with key presses only and the
//      focused element asserted at each step; a dialog traps Tab and gives
//      focus back; the help overlay (?) opens and closes;
//   2. axe-core (WCAG 2.0 A/AA and 2.1 A/AA rules) on every page, dialog and
//      drawer, in light and in dark, the Activity page's charts (and their
//      tables) and a drawer's conversation tree among them: any violation
//      fails; the charts' tables and the tree by keyboard;
//   3. the layout at 1024×700 and at 200 % zoom (640×400 CSS pixels at a
//      device scale of 2) without sideways scrolling of the main content, and
//      prefers-reduced-motion.
//
// Screenshots (a11y-*.png) of the focus ring, a dialog holding focus and the
// 200 % zoom view go to the output folder.
//
//   node e2e/a11y.mjs <relay-binary> [screenshot-dir]
//
// Env: CHROMIUM (default /usr/bin/chromium), E2E_HEADFUL=1 to watch.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { say, check, freePort, poll, mcp, adminToken, openPage, e2eRun } from "./lib.mjs";
import { sendTask } from "./newtask.mjs";
import { addAgents, seedConversation } from "./insights.mjs";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
// The rule sets the issue names: WCAG 2.0 A and AA, WCAG 2.1 A and AA.
const AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

const run = e2eRun({ script: "a11y.mjs", tmpPrefix: "ccr-a11y-", logName: "a11y-relay.log" });
const { bin, out: OUT, tmp } = run;
const dataDir = join(tmp, "data");

/** cli runs a relay CLI verb against the running relay and returns its stdout. */
function cli(port, ...args) {
  return execFileSync(bin, [...args, "--port", String(port), "--data-dir", dataDir], { encoding: "utf8" });
}

async function shot(page, name) {
  await settle(page);
  const file = join(OUT, `a11y-${name}.png`);
  await page.screenshot({ path: file });
  say(`screenshot ${file}`);
}

/** settle waits until no finite animation or transition runs (a theme switch, a switch's knob). */
async function settle(page) {
  await poll(
    "animations to finish",
    () =>
      page.evaluate(
        () =>
          new Promise((done) =>
            requestAnimationFrame(() =>
              done(document.getAnimations().every((a) => a.playState !== "running" || a.effect?.getComputedTiming().iterations === Infinity)),
            ),
          ),
      ),
    5000,
  );
}

// --- the focused element ------------------------------------------------------

/** focused describes document.activeElement: tag, id, role, accessible-ish name, and the dialog it is in. */
function focused(page) {
  return page.evaluate(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return { tag: "body", name: "", role: "", id: "", dialog: "", test: "" };
    const byIds = (ids) => ids.split(/\s+/).map((i) => document.getElementById(i)?.textContent ?? "").join(" ");
    const name =
      e.getAttribute("aria-label") ||
      (e.getAttribute("aria-labelledby") && byIds(e.getAttribute("aria-labelledby"))) ||
      (e.labels && e.labels[0]?.textContent) ||
      e.textContent ||
      "";
    const dlg = e.closest('[role="dialog"]');
    return {
      tag: e.tagName.toLowerCase(),
      id: e.id,
      role: e.getAttribute("role") || "",
      name: name.replace(/\s+/g, " ").trim(),
      dialog: dlg ? byIds(dlg.getAttribute("aria-labelledby") || "").replace(/\s+/g, " ").trim() : "",
      test: e.getAttribute("data-test") || e.getAttribute("data-task-id") || "",
      visibleRing: getComputedStyle(e).outlineStyle !== "none" && parseFloat(getComputedStyle(e).outlineWidth) >= 2,
    };
  });
}
const show = (f) => `<${f.tag}${f.id ? `#${f.id}` : ""}${f.role ? ` role=${f.role}` : ""}> "${f.name.slice(0, 60)}"${f.dialog ? ` in dialog "${f.dialog}"` : ""}`;

/** expectFocus asserts the focused element (after the last key) matches pred; it must show a focus ring. */
async function expectFocus(page, what, pred) {
  let f;
  await poll(`focus on ${what}`, async () => pred((f = await focused(page))), 3000).catch(() => {
    throw new Error(`focus is not on ${what}: it is on ${show(f)}`);
  });
  if (f.tag !== "body" && f.role !== "dialog" && f.tag !== "h1") check(f.visibleRing, `the focused ${show(f)} shows no focus ring`);
  say(`  focus: ${show(f)}`);
  return f;
}

/** tabTo presses Tab (or Shift+Tab) until pred matches the focused element, at most max times. */
async function tabTo(page, what, pred, { max = 40, back = false } = {}) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
    const f = await focused(page);
    if (pred(f)) return expectFocus(page, what, pred);
  }
  throw new Error(`${max} presses of ${back ? "Shift+Tab" : "Tab"} did not reach ${what} (focus on ${show(await focused(page))})`);
}

// --- axe ------------------------------------------------------------------------

const checked = [];
const failures = [];
/** axe runs axe-core on the whole document in light and in dark; violations are collected and fail the run at the end. */
async function axe(page, name) {
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    await settle(page);
    if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE_SOURCE);
    const res = await page.evaluate(
      (tags) => window.axe.run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] }),
      AXE_TAGS,
    );
    const label = `${name} (${scheme})`;
    checked.push(label);
    if (!res.violations.length) {
      say(`axe: ${label}: no violations`);
      continue;
    }
    const lines = res.violations.flatMap((v) => [
      `  ${v.id} (${v.impact}) ${v.help}: ${v.nodes.length} element(s)`,
      ...v.nodes.slice(0, 6).map((n) => `    ${n.target.join(" ")}: ${(n.failureSummary || "").split("\n").slice(1).join(" ").trim().slice(0, 220)}`),
    ]);
    failures.push(`${label}:\n${lines.join("\n")}`);
    say(`axe: ${label}: ${res.violations.length} violation(s)\n${lines.join("\n")}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

/** axeAndClose runs axe on page with the dialog dlg open, as name, then closes dlg with Escape. */
async function axeAndClose(page, dlg, name) {
  await axe(page, name);
  await page.keyboard.press("Escape");
  await dlg.waitFor({ state: "detached" });
}

// --- the worker's program ---------------------------------------------------------

const PNG_B64 =
  "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAAAdUlEQVR42mNgGAVDDYgtnvIfHx4wi2nmEGyGW8WcwYqp7hBiLCXGMXS3nGJHUMNyihxBLcvRHTEglpPsiAF1ADXjnqy0QCvLiQ6FUQeMOmDQOGDAsuFoSTgoKqNBUR0PeINkUDTJBkWjdFA0ywdNx2QU0AoAAIY7+A15WJY7AAAAAElFTkSuQmCC";
function workerScript() {
  return `#!/bin/sh
set -e
echo "Reading the task from $(basename "$1")"
echo "Writing notes.txt"
printf 'Made by the accessibility e2e run.\\n' > notes.txt
echo "Drawing chart.png"
printf '%s' '${PNG_B64}' | base64 -d > chart.png
printf 'Wrote notes.txt and chart.png.\\n' > "$2"
`;
}

async function main() {
  const port = await freePort();
  let natsPort = await freePort();
  while (natsPort === port) natsPort = await freePort();
  const base = `http://127.0.0.1:${port}`;

  run.step = "start relay (in a mesh of one, NATS embedded)";
  await run.startRelay(["--port", String(port), "--data-dir", dataDir, "--nats-embed", `127.0.0.1:${natsPort}`, "--nats-name", "a11y-relay"], base);
  const token = adminToken(bin, dataDir);
  say(`relay up at ${base}`);

  run.step = "seed agents and a worker (CLI verbs)";
  const added = JSON.parse(cli(port, "agents", "add", "e2e-agent", "--name", "E2E Agent", "--model", "test-model", "--capability", "code-execution", "--role", "Writes end-to-end tests.", "--json"));
  const agentToken = added.token ?? added.reveal?.token;
  check(/^cca_/.test(agentToken ?? ""), `agents add gave no token: ${JSON.stringify(added).slice(0, 300)}`);
  cli(port, "agents", "add", "build-bot", "--name", "Build bot", "--model", "script", "--capability", "code-execution", "--json");
  const work = join(tmp, "work");
  mkdirSync(work, { recursive: true });
  const program = join(tmp, "a11y-agent.sh");
  writeFileSync(program, workerScript());
  chmodSync(program, 0o755);
  cli(port, "workers", "set", "build-bot", "--harness", "custom", "--workdir", work, "--command", program, "--prompt", "file", "--arg", "{prompt_file}", "--arg", "{result_file}");
  // e2e-agent has been seen: it calls whoami once, so it shows online.
  await mcp(base, agentToken, "whoami", {});

  run.step = "launch chromium";
  const browser = await run.launch();
  const { page } = await openPage(browser, base);
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(String(e)));

  // ===== 1. keyboard only ==========================================================
  run.step = "keyboard: sign in";
  await page.goto(base + "/");
  await page.getByLabel("Admin token").waitFor();
  await axe(page, "sign-in");
  await expectFocus(page, "the admin token field", (f) => f.id === "token");
  await page.keyboard.type(token);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
  await expectFocus(page, "the Tasks heading", (f) => f.tag === "h1" && f.name === "Tasks");

  run.step = "keyboard: the help overlay (?)";
  await page.keyboard.press("Shift+Slash");
  const help = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  await help.waitFor();
  await expectFocus(page, "inside the help overlay", (f) => f.dialog === "Keyboard shortcuts");
  await axeAndClose(page, help, "help overlay");
  await expectFocus(page, "the Tasks heading again", (f) => f.tag === "h1" && f.name === "Tasks");

  run.step = "keyboard: post a task to an agent";
  await page.keyboard.press("n");
  const dlg = page.getByRole("dialog", { name: "New task" });
  await dlg.waitFor();
  await expectFocus(page, "the Recipient field", (f) => f.id === "nt-recipient" && f.dialog === "New task");
  await page.keyboard.press("ArrowDown");
  await poll("the recipient chosen with ArrowDown", async () => (await dlg.getByLabel("Recipient").inputValue()) !== "", 3000);
  if ((await dlg.getByLabel("Recipient").inputValue()) !== "e2e-agent") {
    await page.keyboard.press("ArrowDown");
    await poll("e2e-agent chosen", async () => (await dlg.getByLabel("Recipient").inputValue()) === "e2e-agent", 3000);
  }
  await tabTo(page, "the Urgent priority", (f) => f.name === "Urgent");
  await page.keyboard.press("Space");
  await poll("Urgent pressed", () => dlg.getByRole("button", { name: "Urgent" }).getAttribute("aria-pressed").then((v) => v === "true"), 3000);
  await tabTo(page, "the Title field", (f) => f.id === "nt-title");
  await page.keyboard.type("Posted with keys only");
  await page.keyboard.press("Tab");
  await expectFocus(page, "the Instructions field", (f) => f.id === "nt-instructions");
  await page.keyboard.type("Posted without a mouse.");
  // Tab holds inside the dialog: from the last control it wraps to the first.
  await tabTo(page, "the Send task button", (f) => f.name === "Send task");
  await page.keyboard.press("Tab");
  const wrapped = await expectFocus(page, "the dialog's first control after the last (focus trapped)", (f) => f.dialog === "New task");
  check(wrapped.name !== "Send task", "Tab did not move on from Send task");
  await shot(page, "dialog-focus-trapped");
  await page.keyboard.press("Shift+Tab");
  await expectFocus(page, "Send task again (Shift+Tab wraps back)", (f) => f.name === "Send task");
  await page.keyboard.press("Enter");
  await dlg.waitFor({ state: "detached" });
  const card = page.locator('[data-column="queued"] [data-task-id]').filter({ hasText: "Posted with keys only" });
  await card.waitFor();
  const kbTaskId = await card.getAttribute("data-task-id");
  await expectFocus(page, "the Tasks heading (focus back where the dialog opened)", (f) => f.tag === "h1" && f.name === "Tasks");

  run.step = "keyboard: open the task from the board";
  await tabTo(page, "the task's card", (f) => f.test === kbTaskId);
  await shot(page, "focus-ring");
  await page.keyboard.press("Enter");
  const drawer = page.getByRole("dialog", { name: "Posted with keys only" });
  await drawer.waitFor();
  await expectFocus(page, "inside the task drawer", (f) => f.dialog === "Posted with keys only");
  check(page.url().includes(`task=${kbTaskId}`), "the drawer is not the task's");
  await page.keyboard.press("Escape");
  await drawer.waitFor({ state: "detached" });
  await expectFocus(page, "the card again (focus returned)", (f) => f.test === kbTaskId);

  run.step = "keyboard: create an invite and copy its message";
  await page.keyboard.press("g");
  await page.keyboard.press("c");
  await page.getByRole("heading", { name: "Connect", level: 1 }).waitFor();
  await expectFocus(page, "the Connect heading", (f) => f.tag === "h1" && f.name === "Connect");
  await tabTo(page, "the invite's Label field", (f) => f.id === "inv-label");
  await page.keyboard.type("Keyboard laptop");
  await tabTo(page, "Create invite", (f) => f.name === "Create invite");
  await page.keyboard.press("Enter");
  const message = await page.locator('[data-test="invite-message"]').innerText({ timeout: 10000 });
  check(/cci_/.test(message), "no invite code in the message");
  await tabTo(page, "Copy message", (f) => f.name === "Copy message");
  await page.keyboard.press("Enter");
  await poll("the clipboard to hold the invite message", async () => (await page.evaluate(() => navigator.clipboard.readText())) === message, 5000);

  run.step = "keyboard: the setup snippet tabs (one Tab stop, arrow keys)";
  await tabTo(page, "the selected snippet tab", (f) => f.role === "tab" && f.name === "Claude Code");
  await page.keyboard.press("ArrowRight");
  await expectFocus(page, "the next tab", (f) => f.role === "tab" && f.name === "Claude Code channel");
  check((await page.getByRole("tab", { name: "Claude Code channel" }).getAttribute("aria-selected")) === "true", "ArrowRight did not select the tab");
  await page.locator('[data-test="snippet-channel"]').waitFor();
  await page.keyboard.press("End");
  await expectFocus(page, "the last tab", (f) => f.role === "tab" && f.name === "JSON");
  await page.keyboard.press("Tab");
  await expectFocus(page, "past the tabs in one Tab press: the Copy button", (f) => f.role !== "tab" && f.name === "Copy");
  say("keyboard only: signed in, posted and opened a task, made an invite and copied its message, moved through tabs");

  // ===== seed the rest: tasks in every column, a finished worker run ================
  run.step = "seed tasks in every column";
  await page.keyboard.press("g");
  await page.keyboard.press("t");
  await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
  for (const title of ["Update the changelog", "Rotate the staging certificate", "Review the release branch"])
    await sendTask(page, { recipient: "e2e-agent", title, instructions: `Please: ${title.toLowerCase()}.` });
  // Posted with keys only is urgent: claimed first. It finishes; the next blocks; the next stays in progress.
  const c1 = await mcp(base, agentToken, "claim_next_task", { waitMs: 5000 });
  await mcp(base, agentToken, "report_task", { taskId: c1.task.id, kind: "completed", message: "Done.", result: "- one\n- two" });
  const c2 = await mcp(base, agentToken, "claim_next_task", { waitMs: 5000 });
  await mcp(base, agentToken, "report_task", { taskId: c2.task.id, kind: "blocked", message: "I have no access to the staging DNS account." });
  const c3 = await mcp(base, agentToken, "claim_next_task", { waitMs: 5000 });
  await mcp(base, agentToken, "report_task", { taskId: c3.task.id, kind: "progress", message: "Half way through." });
  for (const col of ["queued", "claimed", "blocked", "done"]) await page.locator(`[data-column="${col}"] [data-task-id]`).first().waitFor({ timeout: 10000 });

  run.step = "seed a finished worker run with changed files";
  await sendTask(page, { recipient: "build-bot", title: "Make the release chart", instructions: "Write notes.txt and chart.png." });
  const runCard = page.locator("[data-task-id]").filter({ hasText: "Make the release chart" }).first();
  const runTaskId = await runCard.getAttribute("data-task-id");
  await page.locator(`[data-column="done"] [data-task-id="${runTaskId}"]`).waitFor({ timeout: 30000 });
  for (const b of await page.getByRole("button", { name: "Dismiss" }).all()) await b.click({ timeout: 1000 }).catch(() => {});
  say("data on screen: tasks in every column, a worker, a finished run");

  run.step = "seed a conversation across three agents (the charts and the tree)";
  const convTokens = addAgents(bin, port, dataDir, ["ana", "ben", "cat"]);
  const conv = await seedConversation(page, base, convTokens);
  say("data on screen: a conversation operator → ana → ben → cat, cat blocked");

  // ===== 2. axe on every page and dialog =============================================
  const nav = (name) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name }).click();

  run.step = "axe: Tasks";
  await nav("Tasks");
  await page.getByRole("heading", { name: "Needs your attention" }).waitFor();
  await axe(page, "Tasks (board)");
  await page.getByRole("button", { name: "List", exact: true }).click();
  await page.locator("table [data-task-id]").first().waitFor();
  await axe(page, "Tasks (list)");
  await page.getByRole("button", { name: "Board", exact: true }).click();

  run.step = "axe: New task dialog";
  await page.getByRole("button", { name: "New task" }).click();
  const nt = page.getByRole("dialog", { name: "New task" });
  await nt.getByRole("button", { name: "Send task" }).click(); // with its validation messages
  await nt.getByLabel("Recipient").selectOption("e2e-agent");
  await nt.getByText("code-execution").waitFor();
  await axeAndClose(page, nt, "New task dialog");

  run.step = "axe: task drawer with a finished run and changed files";
  await page.goto(`${base}/#/tasks?task=${runTaskId}`);
  const rd = page.getByRole("dialog", { name: "Make the release chart" });
  await rd.locator('[data-test="run-state"]').getByText("Finished").waitFor({ timeout: 15000 });
  await rd.locator('[data-test="changed-files"] [data-path$="/chart.png"]').scrollIntoViewIfNeeded();
  await rd.locator('[data-test="changed-files"] img').waitFor({ timeout: 10000 });
  await axeAndClose(page, rd, "task drawer (run, changed files)");

  run.step = "axe: task drawer of a blocked task, and its Resolve dialog";
  await page.goto(`${base}/#/tasks?task=${c2.task.id}`);
  const bd = page.getByRole("dialog", { name: c2.task.title });
  await bd.waitFor();
  await axe(page, "task drawer (blocked)");
  await bd.getByRole("button", { name: "Cancel task" }).first().click();
  const cancel = page.getByRole("dialog", { name: "Cancel task" });
  await cancel.waitFor();
  await axeAndClose(page, cancel, "note dialog (cancel task)");
  await page.keyboard.press("Escape");
  await bd.waitFor({ state: "detached" });

  run.step = "axe: Agents";
  await nav("Agents");
  await page.locator('[data-agent="build-bot"] [data-test="worker-line"]').waitFor({ timeout: 15000 });
  await page.locator('[data-agent="cat"] [data-test="agent-sparkline"] canvas').waitFor({ timeout: 10000 });
  await axe(page, "Agents (with sparklines)");
  await page.getByRole("button", { name: "Add agent" }).click();
  const ad = page.getByRole("dialog", { name: "Add agent" });
  await ad.waitFor();
  await axeAndClose(page, ad, "agent dialog (add)");
  await page.locator('[data-agent="e2e-agent"]').getByRole("button", { name: "Edit" }).click();
  const ed = page.getByRole("dialog", { name: "Edit E2E Agent" });
  await ed.waitFor();
  await axeAndClose(page, ed, "agent dialog (edit)");
  await page.locator('[data-agent="build-bot"]').getByRole("button", { name: "Worker settings…" }).click();
  const wd = page.getByRole("dialog", { name: "Worker for Build bot" });
  await wd.locator('[data-test="worker-form"]').waitFor();
  await axeAndClose(page, wd, "worker form");

  run.step = "axe: Connect";
  await nav("Connect");
  await page.locator('[data-test="local-agents"] [data-harness="custom"]').waitFor({ timeout: 10000 });
  await page.getByLabel("Give it a first task").check();
  await page.getByRole("button", { name: "Create invite" }).click(); // the form's validation messages
  await page.getByLabel("Task title").fill("Say hello");
  await page.getByLabel("Instructions", { exact: true }).fill("Reply with hello.");
  await page.getByRole("button", { name: "Create invite" }).click();
  await page.locator('[data-test="invite-message"]').waitFor();
  await axe(page, "Connect (invite form and message)");
  await page.getByRole("tab", { name: "Codex" }).click();
  await axe(page, "Connect (Codex tab)");
  await page.locator('[data-test="local-agents"] [data-harness="custom"]').getByRole("button", { name: "Connect" }).click();
  const cd = page.getByRole("dialog", { name: "Connect another command-line agent" });
  await cd.waitFor();
  await cd.getByRole("button", { name: "Connect", exact: true }).click(); // its validation messages
  await cd.getByText("Choose the program to run.").waitFor();
  await axeAndClose(page, cd, "connect dialog");

  run.step = "axe: Activity, Mesh, Settings";
  await nav("Activity");
  await page.locator("[data-event]").first().waitFor({ timeout: 10000 });
  await page.locator('[data-test="activity-charts"] figure canvas').first().waitFor({ timeout: 10000 });
  await axe(page, "Activity (charts)");

  run.step = "keyboard: a chart's table";
  await page.getByRole("heading", { name: "Activity", level: 1 }).focus();
  await tabTo(page, "the first chart's Show table", (f) => f.name === "Show table");
  await page.keyboard.press("Enter");
  await page.locator('[data-test="chart-throughput"] [data-test="chart-table"] table').waitFor();
  await expectFocus(page, "the toggle, now Hide table", (f) => f.name === "Hide table");
  const showTable = page.getByRole("button", { name: "Show table" });
  while ((await showTable.count()) > 0) await showTable.first().click();
  await axe(page, "Activity (charts with their tables)");
  await shot(page, "activity-chart-tables");

  run.step = "keyboard: the conversation tree in the root task's drawer";
  await page.goto(`${base}/#/activity?task=${conv.root}`);
  const cd0 = page.getByRole("dialog", { name: "Build the parser" });
  await cd0.locator('[data-test="handoff-graph"]').waitFor({ timeout: 10000 });
  await tabTo(page, "the tree's Tab stop: the drawer's own task", (f) => f.role === "treeitem" && f.test === conv.root, { max: 60 });
  await page.keyboard.press("ArrowDown");
  await expectFocus(page, "the first hand-off", (f) => f.role === "treeitem" && f.test === conv.lexer);
  await page.keyboard.press("Tab");
  await expectFocus(page, "past the tree in one Tab press", (f) => f.role !== "treeitem");
  await axe(page, "task drawer (conversation tree and graph)");
  await page.locator('[data-tree-id="' + conv.lexer + '"]').focus();
  await page.keyboard.press("Enter");
  await page.getByRole("dialog", { name: "Write the lexer" }).waitFor();
  await shot(page, "drawer-conversation-tree");
  await page.keyboard.press("Escape");
  await nav("Activity");
  await nav("Mesh");
  await page.locator('[data-test="mesh-link"]').getByText("Connected", { exact: true }).waitFor({ timeout: 20000 });
  await page.locator('[data-test="mesh-relays"] [data-relay="a11y-relay"]').waitFor();
  await axe(page, "Mesh (joined)");

  run.step = "axe: Mesh with a name contest (a second relay with its own e2e-agent)";
  const portB = await freePort();
  const dataB = join(tmp, "data-contest");
  const invite = JSON.parse(cli(port, "mesh", "invite", "--json"));
  await run.startRelay(["--port", String(portB), "--data-dir", dataB, "--nats", invite.url, "--nats-name", "contest-relay"], `http://127.0.0.1:${portB}`, "contest-relay");
  // Its own e2e-agent, made before it trusts a11y-relay (which shows one too).
  // A new slug is claimed in the mesh directory, which the relay reaches once
  // its invite has admitted it and it has connected again with its own key.
  await poll("contest-relay adds its own e2e-agent", () => {
    try {
      execFileSync(bin, ["agents", "add", "e2e-agent", "--name", "Its E2E Agent", "--model", "m", "--capability", "code-execution", "--json", "--port", String(portB), "--data-dir", dataB], { stdio: "pipe" });
      return true;
    } catch (e) {
      if (!String(e.stderr).includes("cannot be claimed yet")) throw e;
      return false;
    }
  }, 30000, 300);
  await poll("a11y-relay trusts contest-relay", () => {
    try {
      return cli(port, "mesh", "trust", "contest-relay").includes("is trusted");
    } catch {
      return false;
    }
  }, 30000, 300);
  const contest = page.locator('[data-test="mesh-names"] [data-contest="e2e-agent"]');
  await contest.waitFor({ timeout: 20000 });
  check((await contest.innerText()).includes("e2e-agent@contest-relay"), `the contest row: ${await contest.innerText()}`);
  await axe(page, "Mesh (a name contest)");
  await shot(page, "mesh-name-contest");
  await nav("Settings");
  await page.getByRole("heading", { name: "Settings", level: 1 }).waitFor();
  await page.locator('[data-test="mesh-settings"]').waitFor();
  await axe(page, "Settings (with mesh settings)");

  // ===== 3. small windows, zoom, reduced motion ========================================
  run.step = "layout at 1024×700";
  await page.setViewportSize({ width: 1024, height: 700 });
  for (const p of ["Tasks", "Agents", "Connect", "Activity", "Mesh", "Settings"]) {
    await nav(p);
    await page.getByRole("heading", { name: p, level: 1 }).waitFor();
    await noSidewaysScroll(page, `${p} at 1024×700`);
  }

  run.step = "layout at 200 % zoom";
  const session = await page.evaluate(() => sessionStorage.getItem("crosschat.session"));
  const zoom = await browser.newContext({ viewport: { width: 640, height: 400 }, deviceScaleFactor: 2, colorScheme: "light" });
  await zoom.addInitScript((v) => sessionStorage.setItem("crosschat.session", v), session);
  const zpage = await zoom.newPage();
  zpage.on("pageerror", (e) => consoleErrors.push(String(e)));
  for (const p of ["tasks", "agents", "connect", "activity", "mesh", "settings"]) {
    await zpage.goto(`${base}/#/${p}`);
    await zpage.getByRole("heading", { level: 1 }).first().waitFor();
    await noSidewaysScroll(zpage, `${p} at 200 % zoom`);
    if (p === "tasks") {
      await zpage.locator("[data-task-id]").first().waitFor();
      await shot(zpage, "zoom-200-tasks");
    }
  }
  await zpage.goto(`${base}/#/tasks`);
  await zpage.getByRole("button", { name: "New task" }).click();
  await zpage.getByRole("dialog", { name: "New task" }).getByLabel("Recipient").selectOption("e2e-agent");
  await noSidewaysScroll(zpage, "New task dialog at 200 % zoom");
  await zpage.keyboard.press("Escape");
  await zpage.goto(`${base}/#/agents`);
  await zpage.locator('[data-agent="build-bot"]').getByRole("button", { name: "Worker settings…" }).click();
  await zpage.getByRole("dialog", { name: "Worker for Build bot" }).locator('[data-test="worker-form"]').waitFor();
  await noSidewaysScroll(zpage, "worker form at 200 % zoom");
  await zpage.keyboard.press("Escape");
  await zpage.goto(`${base}/#/tasks?task=${runTaskId}`);
  await zpage.getByRole("dialog", { name: "Make the release chart" }).waitFor();
  await noSidewaysScroll(zpage, "task drawer at 200 % zoom");
  await shot(zpage, "zoom-200-drawer");
  await zoom.close();

  run.step = "prefers-reduced-motion";
  await page.emulateMedia({ reducedMotion: "reduce" });
  const motion = await page.evaluate(() => {
    const el = document.createElement("span");
    el.className = "spinner";
    document.body.append(el);
    const s = getComputedStyle(el);
    const out = { name: s.animationName, iterations: s.animationIterationCount, duration: s.animationDuration };
    el.remove();
    return out;
  });
  check(motion.name === "none" || motion.iterations !== "infinite", `with reduced motion the spinner still spins forever: ${JSON.stringify(motion)}`);
  await page.emulateMedia({ reducedMotion: "no-preference" });

  check(!consoleErrors.length, `errors in the page:\n${consoleErrors.join("\n")}`);
  say(`axe checked ${checked.length} views: ${checked.join(", ")}`);
  check(!failures.length, `${failures.length} failure(s) (axe violations in ${checked.length} views checked, sideways scrolling):\n${failures.join("\n")}`);
}

/** noSidewaysScroll fails when the page or its main content scrolls sideways. */
async function noSidewaysScroll(page, what) {
  await settle(page);
  const o = await page.evaluate(() => {
    const main = document.querySelector("main.content") || document.querySelector("main");
    const dlg = [...document.querySelectorAll('[role="dialog"] .dlg-body')].pop();
    return {
      doc: document.documentElement.scrollWidth - window.innerWidth,
      main: main ? main.scrollWidth - main.clientWidth : 0,
      dialog: dlg ? dlg.scrollWidth - dlg.clientWidth : 0,
    };
  });
  if (o.doc > 0 || o.main > 0 || o.dialog > 0) {
    failures.push(`${what} scrolls sideways: ${JSON.stringify(o)} px too wide`);
    say(`layout: ${what} scrolls sideways: ${JSON.stringify(o)} px too wide`);
  } else say(`layout: ${what}: no sideways scrolling`);
}

run.finish("accessibility e2e", main, { failureShot: "a11y-failure.png", tailLines: 20 });
