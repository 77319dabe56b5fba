import { afterEach, describe, expect, it } from "vitest";
import { flushPromises, mount } from "@vue/test-utils";
import type { ConversationTask } from "../api";
import ConversationTree from "./task/ConversationTree.vue";
import HandoffGraph from "./task/HandoffGraph.vue";
import ChartFigure from "./charts/ChartFigure.vue";
import ActivityPage from "../pages/ActivityPage.vue";
import AgentsPage from "../pages/AgentsPage.vue";
import TaskDrawer from "./TaskDrawer.vue";
import { handoffGraph } from "../lib/conversation";
import { route } from "../lib/route";
import { activityInsights, agent, iso, T0 } from "../test/fakes";
import { withStores } from "../test/mount";

afterEach(() => {
  document.body.innerHTML = "";
});

function ct(id: string, p: Partial<ConversationTask> = {}): ConversationTask {
  return { id, senderSlug: "operator", recipientSlug: "ana", title: `Task ${id}`, status: "queued", hops: 0, createdAt: iso(), updatedAt: iso(), ...p };
}
const tasks = [
  ct("root", { status: "claimed" }),
  ct("lexer", { parentTaskId: "root", senderSlug: "ana", recipientSlug: "ben", hops: 1, createdAt: iso(1000) }),
  ct("tests", { parentTaskId: "lexer", senderSlug: "ben", recipientSlug: "cat", hops: 2, createdAt: iso(2000), status: "blocked" }),
  ct("docs", { parentTaskId: "root", senderSlug: "ana", recipientSlug: "cat", hops: 1, createdAt: iso(3000), status: "completed" }),
];

describe("ConversationTree", () => {
  function tree(current = "root") {
    return mount(ConversationTree, { props: { tasks, current, label: (s: string) => (s === "cat" ? "cat@gpu-box" : s), now: T0 }, attachTo: document.body });
  }
  const items = (w: ReturnType<typeof tree>) => w.findAll('[role="treeitem"]');
  const focusedId = () => document.activeElement?.getAttribute("data-tree-id");

  it("is an ARIA tree with each item's level, set size, position and state", () => {
    const w = tree("lexer");
    expect(w.find('[role="tree"]').attributes("aria-label")).toBe("Tasks of the conversation");
    expect(items(w).map((i) => [i.attributes("aria-level"), i.attributes("aria-posinset"), i.attributes("aria-setsize"), i.attributes("aria-expanded") ?? "-"])).toEqual([
      ["1", "1", "1", "true"],
      ["2", "1", "2", "true"],
      ["3", "1", "1", "-"],
      ["2", "2", "2", "-"],
    ]);
    expect(items(w)[2]!.text()).toContain("Blocked");
    expect(items(w)[2]!.text()).toContain("ben → cat@gpu-box · hop 2");
    // One Tab stop: the drawer's own task.
    expect(items(w).map((i) => i.attributes("tabindex"))).toEqual(["-1", "0", "-1", "-1"]);
    expect(items(w)[1]!.attributes("aria-current")).toBe("true");
  });

  it("moves with the arrow keys, Home and End, closes and opens with Left and Right, and opens a task with Enter", async () => {
    const w = tree();
    (items(w)[0]!.element as HTMLElement).focus();
    await items(w)[0]!.trigger("keydown", { key: "ArrowDown" });
    await flushPromises();
    expect(focusedId()).toBe("lexer");
    expect(items(w).map((i) => i.attributes("tabindex"))).toEqual(["-1", "0", "-1", "-1"]);
    await items(w)[1]!.trigger("keydown", { key: "End" });
    await flushPromises();
    expect(focusedId()).toBe("docs");
    await items(w)[3]!.trigger("keydown", { key: "ArrowLeft" }); // a leaf: to its parent
    await flushPromises();
    expect(focusedId()).toBe("root");
    await items(w)[0]!.trigger("keydown", { key: "ArrowLeft" }); // open: closes
    expect(items(w)).toHaveLength(1);
    expect(items(w)[0]!.attributes("aria-expanded")).toBe("false");
    await items(w)[0]!.trigger("keydown", { key: "ArrowRight" });
    expect(items(w)).toHaveLength(4);
    await items(w)[0]!.trigger("keydown", { key: "Home" });
    await items(w)[2]!.trigger("keydown", { key: "Enter" });
    expect(w.emitted("open")).toEqual([["tests"]]);
    await items(w)[3]!.trigger("click");
    expect(w.emitted("open")![1]).toEqual(["docs"]);
  });
});

describe("HandoffGraph", () => {
  it("draws each agent once, remote ones qualified inside their relay's box, and one arrow per task coloured by state", async () => {
    const g = handoffGraph(tasks, (s) => (s === "cat" ? "gpu-box" : ""), T0);
    const w = mount(HandoffGraph, { props: { graph: g } });
    expect(w.findAll("[data-node]").map((n) => n.attributes("data-node"))).toEqual(["operator", "ana", "ben", "cat@gpu-box"]);
    expect(w.find(".cluster-label").text()).toBe("gpu-box");
    expect(w.findAll("[data-edge] path").map((p) => p.classes()[0])).toEqual(["stroke-claimed", "stroke-queued", "stroke-blocked", "stroke-completed"]);
    expect(w.findAll(".edge-label text").map((t) => t.text())[2]).toMatch(/^#2 blocked · /);
    expect(w.find("svg").attributes("role")).toBe("img");
    expect(w.find("svg").attributes("aria-label")).toContain("ben to cat@gpu-box, blocked");
  });
});

describe("ChartFigure", () => {
  it("has a caption, a legend and a table behind a toggle", async () => {
    const w = mount(ChartFigure, {
      props: { title: "Tasks per hour", summary: "3 posted.", legend: [{ label: "Posted", token: "accent", mark: "dashed" as const }], test: "x" },
      slots: { default: "<p>chart</p>", table: "<table><tbody><tr><td>3</td></tr></tbody></table>" },
      attachTo: document.body,
    });
    expect(w.find("figcaption").text()).toBe("Tasks per hour 3 posted.");
    const fig = w.find("figure");
    expect(document.getElementById(fig.attributes("aria-labelledby")!)!.textContent).toBe("Tasks per hour");
    const toggle = w.get('[data-test="chart-table-toggle"]');
    expect(toggle.attributes("aria-expanded")).toBe("false");
    expect(w.get('[data-test="chart-table"]').isVisible()).toBe(false);
    await toggle.trigger("click");
    expect(toggle.attributes("aria-expanded")).toBe("true");
    expect(toggle.text()).toBe("Hide table");
    expect(w.get('[data-test="chart-table"]').isVisible()).toBe(true);
    expect(toggle.attributes("aria-controls")).toBe(w.get('[data-test="chart-table"]').attributes("id"));
  });
});

describe("charts on the pages", () => {
  it("the Activity page has its three figures above the journal, with the relay's figures in their tables", async () => {
    const insights = activityInsights({
      latencies: [{ slug: "ben", claim: { count: 2, medianMs: 60_000, p90Ms: 120_000 }, finish: { count: 1, medianMs: 30_000, p90Ms: 30_000 } }],
      openWork: [{ slug: "cat", queued: 1, claimed: 0, blocked: 1 }],
    });
    insights.throughput[23] = { ...insights.throughput[23]!, posted: 4, completed: 2, blocked: 1 };
    const s = await withStores({ agents: [agent({ slug: "ben" }), agent({ slug: "cat" })], insights });
    const w = s.mount(ActivityPage);
    await flushPromises();
    const figs = w.findAll("figure");
    expect(figs.map((f) => f.attributes("data-test"))).toEqual(["chart-throughput", "chart-latency", "chart-open-work"]);
    expect(figs[0]!.find('[data-test="chart-summary"]').text()).toMatch(/4 tasks posted, 2 completed, 1 blocked/);
    expect(figs[1]!.findAll("tbody tr")[0]!.text()).toBe("ben21m 00s / 2m 00s130s / 30s");
    expect(figs[2]!.find("tbody tr").text()).toBe("cat1012");
    expect(w.html().indexOf("chart-open-work")).toBeLessThan(w.html().indexOf('id="journal-h"'));
    expect(s.api.insights.activity).toHaveBeenCalledTimes(1);
  });

  it("the Agents page shows an agent's week and its blocked share, and none for the operator", async () => {
    const s = await withStores({
      agents: [agent({ slug: "operator", kind: "human", displayName: "Operator" }), agent({ slug: "cat", displayName: "Cat" })],
      outcomes: [{ slug: "cat", completed: 3, blocked: 1, buckets: [0, 0, 0, 0, 0, 1, 2].map((c, i) => ({ start: iso(i * 86_400_000), completed: c, blocked: i === 6 ? 1 : 0 })) }],
    });
    const w = s.mount(AgentsPage);
    await flushPromises();
    const cat = w.get('[data-agent="cat"]');
    expect(cat.get('[data-test="agent-sparkline"]').text()).toContain("3 done in 7 days");
    expect(cat.get('[data-test="blocked-share"]').text()).toBe("25 % ended blocked (1 of 4)");
    expect(cat.get('[data-test="agent-sparkline"] [role="img"]').attributes("aria-label")).toMatch(/^Tasks completed per day, last 7 days: .*: 2\.$/);
    expect(w.get('[data-agent="operator"]').find('[data-test="agent-sparkline"]').exists()).toBe(false);
  });

  it("the drawer's tree opens a child's drawer with Enter", async () => {
    const s = await withStores({ agents: [agent()], conversation: { id: "root", tasks } });
    const w = s.mount(TaskDrawer, { props: { taskId: "root" } });
    await flushPromises();
    const items = w.findAll('[role="treeitem"]');
    expect(items).toHaveLength(4);
    expect(w.text()).toContain("4 tasks, 3 hand-offs between 4 agents.");
    await items[1]!.trigger("keydown", { key: "Enter" });
    expect(route.query.task).toBe("lexer");
  });
});
