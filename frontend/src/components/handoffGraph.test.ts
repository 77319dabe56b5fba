import { describe, expect, it, vi } from "vitest";
import { mount } from "@vue/test-utils";
import type { ConversationTask } from "../api";
import HandoffGraph from "./task/HandoffGraph.vue";
import { handoffGraph } from "../lib/conversation";
import * as graphLayout from "../lib/graphLayout";
import { iso, T0 } from "../test/fakes";

// layoutGraph counted: the layout (dagre) of a conversation of 500 tasks
// takes most of a second, so it must not run again on every tick of the
// clock that moves the open tasks' durations.
vi.mock("../lib/graphLayout", async (importOriginal) => {
  const orig = await importOriginal<typeof import("../lib/graphLayout")>();
  return { ...orig, layoutGraph: vi.fn(orig.layoutGraph) };
});

function ct(id: string, p: Partial<ConversationTask> = {}): ConversationTask {
  return { id, senderSlug: "operator", recipientSlug: "ana", title: `Task ${id}`, status: "queued", hops: 0, createdAt: iso(), updatedAt: iso(), ...p };
}

describe("HandoffGraph", () => {
  it("lays the graph out again when its agents or hand-offs change, not when the clock moves the open tasks' durations", async () => {
    const layout = vi.mocked(graphLayout.layoutGraph);
    layout.mockClear();
    const tasks = [ct("root", { status: "claimed" }), ct("lexer", { parentTaskId: "root", senderSlug: "ana", recipientSlug: "ben", hops: 1, createdAt: iso(1000) })];
    const w = mount(HandoffGraph, { props: { graph: handoffGraph(tasks, () => "", T0 + 5_000) } });
    expect(layout).toHaveBeenCalledTimes(1);
    const label = () => w.findAll(".edge-label text").map((t) => t.text())[0];
    expect(label()).toBe("#0 in progress · 5s");

    // A minute of ticks: the labels follow the clock, the layout stays.
    for (let s = 6; s < 66; s++) await w.setProps({ graph: handoffGraph(tasks, () => "", T0 + s * 1000) });
    expect(label()).toBe("#0 in progress · 1m 05s");
    expect(layout).toHaveBeenCalledTimes(1);

    // A new hand-off is a new shape.
    const more = [...tasks, ct("tests", { parentTaskId: "lexer", senderSlug: "ben", recipientSlug: "cat", hops: 2, createdAt: iso(2000) })];
    await w.setProps({ graph: handoffGraph(more, () => "", T0 + 66_000) });
    expect(layout).toHaveBeenCalledTimes(2);
    expect(w.findAll("[data-node]").map((n) => n.attributes("data-node"))).toEqual(["operator", "ana", "ben", "cat"]);
    // So is a task that changes state (its label's words).
    await w.setProps({ graph: handoffGraph(more.map((t) => (t.id === "tests" ? { ...t, status: "blocked" as const } : t)), () => "", T0 + 67_000) });
    expect(layout).toHaveBeenCalledTimes(3);
  });
});

describe("HandoffGraph's text", () => {
  it("names the first hand-offs and counts the rest, so a wide conversation is not a label of pages", () => {
    const tasks = [ct("root")];
    for (let i = 1; i < 500; i++) tasks.push(ct(`t${i}`, { parentTaskId: "root", senderSlug: "ana", recipientSlug: `agent-${i % 7}`, hops: 1, createdAt: iso(i * 1000) }));
    const w = mount(HandoffGraph, { props: { graph: handoffGraph(tasks, () => "", T0) } });
    const label = w.find("svg").attributes("aria-label")!;
    expect(label).toMatch(/^Hand-off graph of 9 agents: operator to ana, queued; ana to agent-1, queued;/);
    expect(label).toContain("and 480 more (the tree lists every task).");
    expect(label.length).toBeLessThan(1500);
  });
});
