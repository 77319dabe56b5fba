// End to end, the charts and the conversation tree: three agents (ana, ben,
// cat, made with the CLI) carry a conversation the operator starts
// (operator → ana → ben → cat, cat blocked; ana also hands the docs to cat)
// and a few chores. Then:
//   - the Activity page has its charts, each a figure with a caption, a
//     picture drawn by uPlot and a table behind a toggle; a chore finished
//     while the page is open shows in them without a reload;
//   - the root task's drawer shows the conversation as a tree with one item
//     per task, beside the graph of the four agents; the arrow keys move
//     along the tree and Enter on a child opens it;
//   - the Agents page has each agent's sparkline and blocked share;
// with screenshots (insights-*.png) in light and dark.
// Run by e2e/dashboard.mjs; seedConversation is shared with e2e/a11y.mjs.
import { execFileSync } from "node:child_process";
import { say, check, poll, mcp } from "./lib.mjs";
import { sendTask } from "./newtask.mjs";

/** addAgents makes agents with the CLI against the relay on port and returns their tokens by slug. */
export function addAgents(bin, port, dataDir, slugs) {
  const tokens = {};
  for (const slug of slugs) {
    const out = JSON.parse(
      execFileSync(bin, ["agents", "add", slug, "--name", slug[0].toUpperCase() + slug.slice(1), "--model", "test-model", "--capability", "text-output", "--json", "--port", String(port), "--data-dir", dataDir], {
        encoding: "utf8",
      }),
    );
    tokens[slug] = out.token ?? out.reveal?.token;
    check(/^cca_/.test(tokens[slug] ?? ""), `agents add ${slug} gave no token`);
  }
  return tokens;
}

/** claimFor claims the agent's next task (it must be id) with a long poll. */
async function claimFor(base, token, id) {
  const c = await mcp(base, token, "claim_next_task", { waitMs: 5000 });
  check(c.status === "task" && c.task?.id === id, `claim_next_task gave ${JSON.stringify(c).slice(0, 200)}, want ${id}`);
  return c.task;
}

/**
 * seedConversation posts the root task from the Tasks page of page (the
 * operator) to ana, and has the agents hand it on over MCP: ana → ben
 * ("Write the lexer"), ben → cat ("Test the lexer", blocked), ana → cat
 * ("Write the docs", completed). It returns the four tasks' ids.
 */
export async function seedConversation(page, base, tokens) {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tasks" }).click();
  await sendTask(page, { recipient: "ana", title: "Build the parser", instructions: "Parse the config language; hand off what you need." });
  const root = await page.locator("[data-task-id]").filter({ hasText: "Build the parser" }).first().getAttribute("data-task-id");
  await claimFor(base, tokens.ana, root);
  const lexer = await mcp(base, tokens.ana, "post_task", { recipientSlug: "ben", title: "Write the lexer", instructions: "Tokens for the config language.", parentTaskId: root });
  await claimFor(base, tokens.ben, lexer.id);
  const tests = await mcp(base, tokens.ben, "post_task", { recipientSlug: "cat", title: "Test the lexer", instructions: "Table tests for every token.", parentTaskId: lexer.id });
  await claimFor(base, tokens.cat, tests.id);
  await mcp(base, tokens.cat, "report_task", { taskId: tests.id, kind: "blocked", message: "There are no fixtures to test against." });
  const docs = await mcp(base, tokens.ana, "post_task", { recipientSlug: "cat", title: "Write the docs", instructions: "Document the syntax.", parentTaskId: root });
  await claimFor(base, tokens.cat, docs.id);
  await mcp(base, tokens.cat, "report_task", { taskId: docs.id, kind: "completed", message: "Docs written.", result: "docs/syntax.md" });
  return { root, lexer: lexer.id, tests: tests.id, docs: docs.id };
}

/** chore has from post a task to to, which claims and completes it. */
async function chore(base, tokens, from, to, title) {
  const t = await mcp(base, tokens[from], "post_task", { recipientSlug: to, title, instructions: `Please: ${title.toLowerCase()}.` });
  await claimFor(base, tokens[to], t.id);
  await mcp(base, tokens[to], "report_task", { taskId: t.id, kind: "completed", message: "Done." });
  return t.id;
}

/** top scrolls the page's content back to its start, for a screenshot. */
async function top(page) {
  await page.evaluate(() => (document.querySelector("main") ?? document.scrollingElement)?.scrollTo(0, 0));
}

/** totals reads the throughput figure's table: posted, completed, blocked over the 24 hours. */
async function totals(page) {
  return page.locator('[data-test="chart-throughput"] [data-test="chart-table"] tbody tr').evaluateAll((rows) =>
    rows.reduce(
      (t, r) => {
        const c = [...r.querySelectorAll("td")].map((d) => Number(d.textContent));
        return { posted: t.posted + c[0], completed: t.completed + c[1], blocked: t.blocked + c[2] };
      },
      { posted: 0, completed: 0, blocked: 0 },
    ),
  );
}

/**
 * runInsights runs the scenario on page, signed in to the relay at base
 * (port, dataDir) that run started; shot(page, name) saves a screenshot.
 */
export async function runInsights({ page, run, base, port, dataDir, shot, dark }) {
  const nav = (name) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name }).click();

  run.step = "insights: the charts before";
  await nav("Activity");
  const tp = page.locator('[data-test="chart-throughput"]');
  await tp.getByRole("button", { name: "Show table" }).click();
  await tp.locator('[data-test="chart-table"] tbody tr').first().waitFor({ timeout: 10000 });
  const before = await totals(page);
  await tp.getByRole("button", { name: "Hide table" }).click();

  run.step = "insights: agents and a conversation across three of them";
  const tokens = addAgents(run.bin, port, dataDir, ["ana", "ben", "cat"]);
  const ids = await seedConversation(page, base, tokens);
  await chore(base, tokens, "ana", "ben", "Tidy the changelog");
  await chore(base, tokens, "ana", "ben", "Bump the version");
  await chore(base, tokens, "ben", "cat", "Rename the config key");
  await mcp(base, tokens.ana, "post_task", { recipientSlug: "cat", title: "Review the grammar", instructions: "Read it." }); // stays queued
  say("conversation operator → ana → ben → cat (cat blocked) and chores seeded");

  run.step = "insights: the Activity page's charts";
  await nav("Activity");
  await page.getByRole("heading", { name: "Activity", level: 1 }).waitFor();
  const charts = page.locator('[data-test="activity-charts"]');
  await charts.locator("figure").first().waitFor({ timeout: 10000 });
  const figures = await charts.locator("figure").all();
  check(figures.length >= 2, `the Activity page has ${figures.length} chart figures, want at least 2`);
  for (const f of figures) {
    const caption = (await f.locator("figcaption").innerText()).trim();
    check(caption.length > 20, `a chart's caption says only "${caption}"`);
    await f.locator('[role="img"] canvas').first().waitFor({ timeout: 10000 }); // drawn by uPlot
    const name = await f.locator('[role="img"]').first().getAttribute("aria-label");
    check(name && name.length > 20, `a chart's picture has no text name: ${name}`);
    const toggle = f.getByRole("button", { name: "Show table" });
    check((await toggle.getAttribute("aria-expanded")) === "false", "a chart's table is shown before its toggle is pressed");
    await toggle.click();
    await f.getByRole("button", { name: "Hide table" }).waitFor();
    await f.locator('[data-test="chart-table"] table tbody tr').first().waitFor();
  }
  let t = await totals(page);
  const grew = (n) => ({ posted: t.posted - before.posted, completed: t.completed - before.completed, blocked: t.blocked - before.blocked, ...n });
  check(
    JSON.stringify(grew({})) === JSON.stringify({ posted: 8, completed: 4, blocked: 1 }),
    `the throughput table grew by ${JSON.stringify(grew({}))} over the scenario, want 8 posted, 4 completed, 1 blocked`,
  );
  const lat = await page.locator('[data-test="chart-latency"] [data-test="chart-table"] tbody th').allInnerTexts();
  check(["ana", "ben", "cat"].every((s) => lat.includes(s)), `the latency table names ${lat.join(", ")}, want ana, ben and cat`);
  const open = await page.locator('[data-test="chart-open-work"] [data-test="chart-table"] tbody tr').allInnerTexts();
  check(open.some((r) => /^cat\s+1\s+0\s+1\s+2$/.test(r.trim())), `open work by agent: ${JSON.stringify(open)}, want cat with 1 queued and 1 blocked`);
  await top(page);
  await shot(page, "insights-01-activity-tables");
  for (const f of figures) await f.getByRole("button", { name: "Hide table" }).click();
  await page.locator("[data-event]").first().waitFor(); // the journal stays below the charts
  await top(page);
  await shot(page, "insights-02-activity");
  say(`Activity: ${figures.length} charts with captions, pictures and tables; throughput grew by ${JSON.stringify(grew({}))}`);

  run.step = "insights: the charts follow a finished chore live";
  await chore(base, tokens, "ana", "ben", "Update the README");
  await tp.getByRole("button", { name: "Show table" }).click();
  await poll("the throughput chart to count the new chore", async () => (t = await totals(page)).completed === before.completed + 5, 15000);
  await tp.getByRole("button", { name: "Hide table" }).click();
  say("the charts counted a chore finished while the page was open");

  run.step = "insights: the root task's drawer shows the conversation tree";
  await page.goto(`${base}/#/activity?task=${ids.root}`);
  const drawer = page.getByRole("dialog", { name: "Build the parser" });
  await drawer.waitFor();
  const tree = drawer.getByRole("tree", { name: "Tasks of the conversation" });
  await tree.waitFor({ timeout: 10000 });
  const items = tree.getByRole("treeitem");
  await poll("one tree item per task of the conversation", async () => (await items.count()) === 4, 10000);
  const levels = await items.evaluateAll((els) => els.map((e) => `${e.getAttribute("aria-level")}:${e.querySelector(".title")?.textContent}`));
  check(
    JSON.stringify(levels) === JSON.stringify(["1:Build the parser", "2:Write the lexer", "3:Test the lexer", "2:Write the docs"]),
    `the tree's items by level: ${JSON.stringify(levels)}`,
  );
  const graph = drawer.locator('[data-test="handoff-graph"]');
  await graph.waitFor({ timeout: 10000 });
  const nodes = await graph.locator("[data-node]").evaluateAll((els) => els.map((e) => e.getAttribute("data-node")).sort());
  check(JSON.stringify(nodes) === JSON.stringify(["ana", "ben", "cat", "operator"]), `the graph's agents: ${JSON.stringify(nodes)}`);
  check((await graph.locator("[data-edge]").count()) === 4, "the graph does not draw one hand-off per task");
  await drawer.locator('[data-test="conversation-view"]').scrollIntoViewIfNeeded();
  await shot(page, "insights-03-drawer-tree");

  run.step = "insights: the tree by keyboard, Enter opens a child";
  const root = tree.locator(`[data-tree-id="${ids.root}"]`);
  check((await root.getAttribute("tabindex")) === "0", "the drawer's own task is not the tree's Tab stop");
  check((await tree.locator('[tabindex="0"]').count()) === 1, "the tree has more than one Tab stop");
  await root.focus();
  await page.keyboard.press("End");
  await poll("End to focus the last item", () => page.evaluate((id) => document.activeElement?.getAttribute("data-tree-id") === id, ids.docs), 3000);
  await page.keyboard.press("Home");
  await page.keyboard.press("ArrowLeft"); // at a root with its children shown: closes it
  await poll("ArrowLeft to collapse the root", async () => (await root.getAttribute("aria-expanded")) === "false" && (await items.count()) === 1, 3000);
  await page.keyboard.press("ArrowRight");
  await poll("ArrowRight to expand it again", async () => (await items.count()) === 4, 3000);
  await page.keyboard.press("ArrowDown");
  await poll("ArrowDown to focus the first child", () => page.evaluate((id) => document.activeElement?.getAttribute("data-tree-id") === id, ids.lexer), 3000);
  await page.keyboard.press("Enter");
  const child = page.getByRole("dialog", { name: "Write the lexer" });
  await child.waitFor({ timeout: 10000 });
  check(page.url().includes(`task=${ids.lexer}`), `Enter on the child did not open it: ${page.url()}`);
  await child.getByRole("tree").locator(`[data-tree-id="${ids.lexer}"][aria-current="true"]`).waitFor({ timeout: 10000 });
  say("the root's drawer shows 4 tree items and 4 agents; Enter on a child opened it");
  await page.keyboard.press("Escape");
  await child.waitFor({ state: "detached" });

  run.step = "insights: the Agents page's sparklines";
  await nav("Agents");
  const cat = page.locator('[data-agent="cat"]');
  await cat.locator('[data-test="agent-sparkline"] canvas').waitFor({ timeout: 10000 });
  const share = await cat.locator('[data-test="blocked-share"]').innerText();
  check(/33 % ended blocked \(1 of 3\)/.test(share), `cat's blocked share says "${share}", want 33 % (1 of 3)`);
  const benDone = await page.locator('[data-agent="ben"] [data-test="agent-sparkline"]').innerText();
  check(/3 done in 7 days/.test(benDone), `ben's sparkline says "${benDone}", want 3 done`);
  await shot(page, "insights-04-agents");

  run.step = "insights: dark";
  if (dark) {
    const dpage = await dark();
    await dpage.goto(`${base}/#/activity`);
    await dpage.locator('[data-test="activity-charts"] figure canvas').first().waitFor({ timeout: 10000 });
    await shot(dpage, "insights-05-activity-dark");
    await dpage.goto(`${base}/#/activity?task=${ids.root}`);
    await dpage.getByRole("dialog", { name: "Build the parser" }).locator('[data-test="handoff-graph"]').waitFor({ timeout: 10000 });
    await dpage.locator('[data-test="conversation-view"]').scrollIntoViewIfNeeded();
    await shot(dpage, "insights-06-drawer-tree-dark");
    await dpage.goto(`${base}/#/agents`);
    await dpage.locator('[data-agent="cat"] [data-test="agent-sparkline"] canvas').waitFor({ timeout: 10000 });
    await shot(dpage, "insights-07-agents-dark");
    await dpage.context().close();
  }
  return ids;
}
