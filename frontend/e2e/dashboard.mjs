// End to end: the real dashboard in Debian's Chromium against a real
// `crosschat-relay serve`. Starts the relay itself on a free port with a
// throwaway data dir, signs in with the admin token, and walks the operator
// scenario: invite → enroll → live agent → new task → MCP claim/complete →
// live Done + alert → request changes → the agent sees the task again; then
// the charts and the conversation tree (e2e/insights.mjs): a conversation
// across three agents, the Activity page's charts, the root task's tree;
// workers (e2e/workers.mjs): connect a local agent program, its run live on
// the task page, the files it made. Screenshots of every page go to the output folder.
//
//   node e2e/dashboard.mjs <relay-binary> [screenshot-dir]
//
// Env: CROSSCHAT_SCREENSHOTS (screenshot dir, default ../.ci/out/dashboard
// relative to frontend/), CHROMIUM (default /usr/bin/chromium),
// E2E_HEADFUL=1 to watch. Exits non-zero with a message on any failure.
import { join } from "node:path";
import { say, check, freePort, poll, mcp, adminToken, openPage, e2eRun } from "./lib.mjs";
import { sendTask } from "./newtask.mjs";
import { runWorkers } from "./workers.mjs";
import { runMeshTrust } from "./meshtrust.mjs";
import { runInsights } from "./insights.mjs";

const run = e2eRun({ script: "dashboard.mjs", tmpPrefix: "ccr-dash-", logName: "relay.log" });
const { bin, out: OUT, tmp } = run;
const dataDir = join(tmp, "data");

async function shot(page, name, { keepToasts = false } = {}) {
  if (!keepToasts) {
    // Alerts are checked where they matter; elsewhere they would hide the page.
    for (const b of await page.getByRole("button", { name: "Dismiss" }).all()) await b.click({ timeout: 1000 }).catch(() => {});
  }
  await page.waitForTimeout(150); // let transitions and fonts settle
  const file = join(OUT, `${name}.png`);
  await page.screenshot({ path: file });
  say(`screenshot ${file}`);
}

async function main() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;

  run.step = "start relay";
  await run.startRelay(["--port", String(port), "--data-dir", dataDir], base);
  const token = adminToken(bin, dataDir);
  check(token.length >= 20 && !/\s/.test(token), `unexpected admin token output: ${JSON.stringify(token)}`);
  say(`relay up at ${base}`);

  run.step = "launch chromium";
  const browser = await run.launch();
  const { ctx, page } = await openPage(browser, base);
  const consoleErrors = [];
  page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  if (process.env.E2E_TRACE) {
    page.on("request", (r) => r.url().includes("/bridge/") && say(`→ ${r.method()} ${r.url().replace(base, "")}`));
    page.on("requestfinished", (r) => r.url().includes("/bridge/") && say(`← ${r.url().replace(base, "")}`));
    page.on("requestfailed", (r) => r.url().includes("/bridge/") && say(`✗ ${r.url().replace(base, "")} ${r.failure()?.errorText}`));
  }

  run.step = "sign in";
  await page.goto(base + "/");
  await page.getByLabel("Admin token").waitFor();
  await shot(page, "01-sign-in");
  await page.getByLabel("Admin token").fill("not-the-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not the admin token" }).waitFor();
  consoleErrors.length = 0; // the refused sign-in logs its 401
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
  await page.getByText("No tasks yet").waitFor();
  say("signed in; empty Tasks page");

  run.step = "create invite";
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Connect" }).click();
  await page.getByRole("heading", { name: "Connect", level: 1 }).waitFor();
  await page.getByLabel("Label").fill("E2E laptop");
  await page.getByLabel("Role").fill("Writes end-to-end tests.");
  await page.getByRole("button", { name: "Create invite" }).click();
  const message = await page.locator('[data-test="invite-message"]').innerText({ timeout: 10000 });
  const code = /cci_[A-Za-z0-9_-]+/.exec(message)?.[0];
  check(code, `no invite code in the message on the page:\n${message.slice(0, 400)}`);
  // The message names the address this dashboard was reached at (127.0.0.1, not localhost).
  check(message.includes(`Relay: ${base}\n`) && message.includes(`${base}/api/enroll`), `invite message does not name ${base}:\n${message.slice(0, 400)}`);
  await page.getByText("Waiting for an agent to join").waitFor();
  await shot(page, "04-connect-invite");
  say(`invite created (${code.slice(0, 8)}…)`);

  run.step = "channel setup on Connect";
  await page.getByRole("tab", { name: "Claude Code channel" }).click();
  const channelJSON = await page.locator('[data-test="snippet-channel"]').innerText();
  const channelEntry = JSON.parse(channelJSON).mcpServers?.crosschat;
  check(
    channelEntry?.command === "crosschat-relay" && channelEntry?.args?.join(" ") === "channel" &&
      channelEntry?.env?.CROSSCHAT_TOKEN === "<token>" && channelEntry?.env?.CROSSCHAT_URL === base,
    `the Connect page's channel .mcp.json is not one entry for crosschat-relay channel at ${base}:\n${channelJSON}`,
  );
  const channelStart = await page.locator('[data-test="snippet-channel-start"]').innerText();
  check(channelStart === "claude --dangerously-load-development-channels server:crosschat", `channel start command: ${channelStart}`);
  await shot(page, "04b-connect-channel");
  say("Connect shows the Claude Code channel setup");

  run.step = "enroll agent over HTTP";
  const slug = "e2e-agent";
  const enrollRes = await fetch(`${base}/api/enroll`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ invite: code, slug, displayName: "E2E Agent", modelSlug: "test-model", capabilities: ["text-input", "text-output", "code-execution"] }),
  });
  const enrolled = await enrollRes.json();
  check(enrollRes.status === 201, `enroll: HTTP ${enrollRes.status}: ${JSON.stringify(enrolled)}`);
  const agentToken = enrolled.token;
  check(/^cca_/.test(agentToken), "enroll gave no agent token");
  check(enrolled.mcpUrl === `${base}/mcp`, `enroll named ${enrolled.mcpUrl}, not the address it was reached at (${base}/mcp)`);

  run.step = "agent appears live";
  await page.locator('[data-test="invite-status"]').getByText(slug).waitFor({ timeout: 10000 });
  await page.locator(`[data-invite-id]`).first().getByText("Used up").waitFor();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" }).click();
  await page.locator(`[data-agent="${slug}"]`).waitFor({ timeout: 10000 });
  say("enrolled agent appeared live on Connect and Agents");

  run.step = "post a task from the New task dialog";
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tasks" }).click();
  await page.getByRole("button", { name: "New task" }).click();
  const dlg = page.getByRole("dialog", { name: "New task" });
  await dlg.waitFor();
  await dlg.getByRole("button", { name: "Send task" }).click();
  await dlg.getByText("Choose who should do this.").waitFor(); // validation before any request
  await dlg.getByLabel("Recipient").selectOption(slug);
  await dlg.getByLabel("Title").fill("Write the release notes");
  await dlg.getByLabel("Instructions").fill("Summarize the changes since the last tag in five bullets.");
  await dlg.getByRole("button", { name: "Urgent" }).click();
  await dlg.getByRole("button", { name: "code-execution" }).click();
  await dlg.getByRole("button", { name: "Send task" }).click();
  await dlg.waitFor({ state: "detached" });
  const queuedCard = page.locator('[data-column="queued"] [data-task-id]').filter({ hasText: "Write the release notes" });
  await queuedCard.waitFor();
  const taskId = await queuedCard.getAttribute("data-task-id");
  say(`task ${taskId} queued`);

  run.step = "MCP client claims the task";
  const claim = await mcp(base, agentToken, "claim_next_task", { waitMs: 5000 });
  check(claim.status === "task" && claim.task?.id === taskId, `claim_next_task gave ${JSON.stringify(claim).slice(0, 300)}`);
  await page.locator(`[data-column="claimed"] [data-task-id="${taskId}"]`).waitFor({ timeout: 10000 });
  await page.locator(`[data-column="claimed"] [data-task-id="${taskId}"] [data-test="lease"]`).getByText("left").waitFor();
  say("card moved to In progress live");
  await mcp(base, agentToken, "report_task", { taskId, kind: "progress", message: "Collected 14 commits since v0.3.0." });
  await page.locator(`[data-task-id="${taskId}"]`).getByText("Collected 14 commits").waitFor({ timeout: 10000 });

  run.step = "MCP client completes the task";
  await mcp(base, agentToken, "report_task", {
    taskId,
    kind: "completed",
    message: "Release notes are ready.",
    result: "- Faster claims\n- Invites with first tasks\n- Dark mode\n- Request changes\n- Live board",
  });
  await page.locator(`[data-column="done"] [data-task-id="${taskId}"]`).waitFor({ timeout: 10000 });
  await page.locator('[data-test="toast"]').filter({ hasText: "Done: Write the release notes" }).waitFor({ timeout: 10000 });
  await page.locator('[data-tile="done"] .tile-value').filter({ hasText: /^1$/ }).waitFor({ timeout: 10000 });
  say("card moved to Done live; alert shown; Done today counts it");
  await shot(page, "02-tasks-board", { keepToasts: true });

  run.step = "request changes from the drawer";
  await page.locator(`[data-column="done"] [data-task-id="${taskId}"]`).click();
  const drawer = page.getByRole("dialog", { name: "Write the release notes" });
  await drawer.waitFor();
  await drawer.locator('[data-test="result"]').getByText("Faster claims").waitFor();
  check(page.url().includes(`task=${taskId}`), `drawer did not put ?task= in the URL: ${page.url()}`);
  await shot(page, "03-task-drawer");
  await drawer.getByRole("button", { name: "Request changes" }).click();
  const note = page.getByRole("dialog", { name: "Request changes" });
  await note.getByLabel("What to change").fill("Add a line about the new Settings page.");
  await note.getByRole("button", { name: "Request changes" }).click();
  await note.waitFor({ state: "detached" });
  await drawer.getByText("Add a line about the new Settings page.").first().waitFor({ timeout: 10000 });
  await page.keyboard.press("Escape");
  await drawer.waitFor({ state: "detached" });
  await page.locator(`[data-column="queued"] [data-task-id="${taskId}"]`).waitFor({ timeout: 10000 });

  run.step = "the agent sees the task again";
  const again = await mcp(base, agentToken, "claim_next_task", { waitMs: 5000 });
  check(again.status === "task" && again.task?.id === taskId, `second claim_next_task gave ${JSON.stringify(again).slice(0, 300)}`);
  await page.locator(`[data-column="claimed"] [data-task-id="${taskId}"]`).waitFor({ timeout: 10000 });
  say("agent claimed the same task again after Request changes");
  await poll("the In progress tile to show 1", async () => (await page.locator('[data-tile="claimed"]').innerText()).includes("1"), 5000);

  run.step = "block a second task (attention list)";
  await sendTask(page, { recipient: slug, title: "Rotate the staging certificate", instructions: "Renew it before Friday." });
  const second = await page.locator('[data-column="queued"] [data-task-id]').filter({ hasText: "Rotate the staging" }).getAttribute("data-task-id");
  await mcp(base, agentToken, "report_task", { taskId, kind: "progress", message: "Adding the Settings line." });
  const c2 = await mcp(base, agentToken, "claim_next_task", { waitMs: 5000 });
  check(c2.task?.id === second, `expected to claim ${second}, got ${JSON.stringify(c2).slice(0, 200)}`);
  await mcp(base, agentToken, "report_task", { taskId: second, kind: "blocked", message: "I have no access to the staging DNS account." });
  await page.getByRole("heading", { name: "Needs your attention" }).waitFor({ timeout: 10000 });
  await page.locator('[data-test="toast"]').filter({ hasText: "Blocked: Rotate the staging certificate" }).waitFor({ timeout: 10000 });
  await poll("window title with the attention count", async () => /^\(1\) /.test(await page.title()), 5000);
  await shot(page, "02b-tasks-attention");
  await page.getByRole("button", { name: "List" }).click();
  await page.locator("table [data-task-id]").first().waitFor();
  await shot(page, "02c-tasks-list");
  await page.getByRole("button", { name: "Board" }).click();

  run.step = "agents page";
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" }).click();
  await page.locator(`[data-agent="${slug}"]`).getByText("online", { exact: false }).first().waitFor();
  const cards = await page.locator("[data-agent]").count();
  const cardsOnline = await page.locator("[data-agent] .presence.on").count();
  const header = await page.locator('[data-test="agents-count"]').innerText();
  check(header === `${cardsOnline} of ${cards} online`, `the Agents header says "${header}" for ${cards} cards, ${cardsOnline} online`);
  await shot(page, "05-agents");

  run.step = "activity page";
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Activity" }).click();
  await page.getByRole("heading", { name: "Activity", level: 1 }).waitFor();
  await page.locator("[data-event]").first().waitFor({ timeout: 10000 });
  await shot(page, "06-activity");

  await runInsights({
    page,
    run,
    base,
    port,
    dataDir,
    shot,
    // A page of the same session in dark mode (the session is in sessionStorage).
    dark: async () => {
      const session = await page.evaluate(() => sessionStorage.getItem("crosschat.session"));
      const c = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" });
      await c.addInitScript((v) => sessionStorage.setItem("crosschat.session", v), session);
      const p = await c.newPage();
      p.on("pageerror", (e) => consoleErrors.push(String(e)));
      p.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
      return p;
    },
  });

  run.step = "mesh page (not joined)";
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Mesh" }).click();
  await page.getByRole("heading", { name: "Mesh", level: 1 }).waitFor();
  await page.locator('[data-test="mesh-not-joined"]').getByText("Not joined").waitFor({ timeout: 10000 });
  await shot(page, "06b-mesh-not-joined");

  run.step = "settings page";
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Settings" }).click();
  await page.getByRole("heading", { name: "Settings", level: 1 }).waitFor();
  await page.getByText(dataDir).waitFor();
  await page.getByText(`${base}/mcp`, { exact: true }).waitFor(); // the MCP URL as this browser reaches it
  await shot(page, "07-settings");
  const meshForm = page.locator('[data-test="mesh-settings"]');
  await meshForm.getByText("The relay is not in a mesh.").waitFor({ timeout: 10000 });
  await meshForm.getByLabel("NATS server URLs").fill("nats://nats1.example:4222, nats://nats2.example:4222");
  await meshForm.getByRole("button", { name: "Save" }).click();
  await meshForm.getByText("Saved changes apply at the next start.").waitFor({ timeout: 10000 });
  await shot(page, "07b-settings-mesh-saved");

  run.step = "small window (1024×700)";
  await page.setViewportSize({ width: 1024, height: 700 });
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tasks" }).click();
  await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
  await shot(page, "08-tasks-1024x700");
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  check(!overflow, "the Tasks page scrolls sideways at 1024×700");

  run.step = "dark mode";
  const dark = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" });
  // The session lives in the tab's sessionStorage (no cookie): carry it over.
  const sessionValue = await page.evaluate(() => sessionStorage.getItem("crosschat.session"));
  check(!!sessionValue, "sign-in kept no session in sessionStorage");
  check((await ctx.cookies()).length === 0, "sign-in set a cookie (other ports of this host would receive it)");
  await dark.addInitScript((v) => sessionStorage.setItem("crosschat.session", v), sessionValue);
  const dpage = await dark.newPage();
  await dpage.goto(base + "/#/tasks");
  await dpage.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
  await dpage.locator(`[data-task-id="${taskId}"]`).first().waitFor();
  const bg = await dpage.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  check(bg !== "rgb(246, 247, 249)", `dark mode did not change the background (${bg})`);
  await shot(dpage, "09-tasks-dark");
  await dpage.goto(base + `/#/tasks?task=${taskId}`);
  await dpage.getByRole("dialog").waitFor();
  await shot(dpage, "10-task-drawer-dark");
  await dark.close();

  await runWorkers({ page, run, shot });

  run.step = "--public-url: the invite names the public address";
  const publicURL = "https://relay.example.test/crosschat";
  const port2 = await freePort();
  const base2 = `http://127.0.0.1:${port2}`;
  const dataDir2 = join(tmp, "data-public");
  // It also embeds NATS, so the Mesh page is seen in a mesh of one relay.
  let natsPort = await freePort();
  while (natsPort === port2 || natsPort === port) natsPort = await freePort();
  await run.startRelay(["--port", String(port2), "--data-dir", dataDir2, "--public-url", publicURL,
    "--nats-embed", `127.0.0.1:${natsPort}`, "--nats-name", "e2e-relay"], base2, "the --public-url relay");
  const token2 = adminToken(bin, dataDir2);
  const pctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const ppage = await pctx.newPage();
  ppage.on("pageerror", (e) => consoleErrors.push(String(e)));
  await ppage.goto(base2 + "/#/connect");
  await ppage.getByLabel("Admin token").fill(token2);
  await ppage.getByRole("button", { name: "Sign in" }).click();
  await ppage.getByRole("heading", { name: "Connect", level: 1 }).waitFor();
  await ppage.getByRole("button", { name: "Create invite" }).click();
  const message2 = await ppage.locator('[data-test="invite-message"]').innerText({ timeout: 10000 });
  check(message2.includes(`Relay: ${publicURL}\n`) && message2.includes(`${publicURL}/api/enroll`) && !message2.includes(base2),
    `with --public-url the invite message does not name only ${publicURL}:\n${message2.slice(0, 400)}`);
  await shot(ppage, "19-connect-invite-public-url");
  run.step = "mesh page (joined)";
  await ppage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Mesh" }).click();
  await ppage.locator('[data-test="mesh-link"]').getByText("Connected", { exact: true }).waitFor({ timeout: 20000 });
  await ppage.locator('[data-test="mesh-relays"] [data-relay="e2e-relay"]').getByText("This relay").waitFor();
  await shot(ppage, "20-mesh-joined");
  await runMeshTrust({ page: ppage, run, base: base2, port: port2, dataDir: dataDir2, shot });
  await pctx.close();
  say(`with --public-url the invite names ${publicURL}`);

  check(!consoleErrors.length, `console errors in the page:\n${consoleErrors.join("\n")}`);
}

run.finish("dashboard e2e", main, { failureShot: "failure.png", tailLines: 30 });
