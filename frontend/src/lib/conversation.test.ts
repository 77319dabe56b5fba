import { describe, expect, it } from "vitest";
import type { ConversationTask } from "../api";
import { conversationTree, handoffGraph, qualified, taskDuration, treeKey, visibleRows, type TreeRow } from "./conversation";
import { layoutGraph } from "./graphLayout";

const T = Date.parse("2026-03-01T12:00:00.000Z");
const at = (min: number) => new Date(T + min * 60_000).toISOString();

function ct(id: string, p: Partial<ConversationTask> = {}): ConversationTask {
  return { id, senderSlug: "operator", recipientSlug: "ana", title: id, status: "queued", hops: 0, createdAt: at(0), updatedAt: at(0), ...p };
}

// operator → ana (root) → ben (lexer) → cat (tests, blocked); ana → cat (docs).
const conversation = [
  ct("docs", { parentTaskId: "root", senderSlug: "ana", recipientSlug: "cat", hops: 1, createdAt: at(3), status: "completed", updatedAt: at(9) }),
  ct("root", { status: "claimed" }),
  ct("tests", { parentTaskId: "lexer", senderSlug: "ben", recipientSlug: "cat", hops: 2, createdAt: at(2), status: "blocked", updatedAt: at(4) }),
  ct("lexer", { parentTaskId: "root", senderSlug: "ana", recipientSlug: "ben", hops: 1, createdAt: at(1), status: "claimed" }),
];
const ids = (rows: TreeRow[]) => rows.map((r) => `${r.level}:${r.id}:${r.posinset}/${r.setsize}${r.hasChildren ? (r.expanded ? "-" : "+") : ""}`);

describe("conversationTree and visibleRows", () => {
  it("links tasks root to leaves, children oldest first, with their ARIA positions", () => {
    const rows = visibleRows(conversationTree(conversation), new Set());
    expect(ids(rows)).toEqual(["1:root:1/1-", "2:lexer:1/2-", "3:tests:1/1", "2:docs:2/2"]);
    expect(rows[2]!.parentId).toBe("lexer");
  });

  it("leaves out the descendants of a collapsed task", () => {
    expect(ids(visibleRows(conversationTree(conversation), new Set(["lexer"])))).toEqual(["1:root:1/1-", "2:lexer:1/2+", "2:docs:2/2"]);
    expect(ids(visibleRows(conversationTree(conversation), new Set(["root"])))).toEqual(["1:root:1/1+"]);
  });

  it("makes a task whose parent it does not hold a root, so none is lost", () => {
    const rows = visibleRows(conversationTree([ct("a", { parentTaskId: "pruned" }), ct("b", { createdAt: at(1) })]), new Set());
    expect(ids(rows)).toEqual(["1:a:1/2", "1:b:2/2"]);
  });

  it("shows tasks whose parent links form a cycle instead of hiding them", () => {
    const rows = visibleRows(conversationTree([ct("a", { parentTaskId: "b" }), ct("b", { parentTaskId: "a", createdAt: at(1) })]), new Set());
    expect(rows.map((r) => r.id).sort()).toEqual(["a", "b"]);
  });
});

describe("treeKey", () => {
  const rows = visibleRows(conversationTree(conversation), new Set());
  const closed = visibleRows(conversationTree(conversation), new Set(["lexer"]));
  it.each([
    ["ArrowDown", rows, "root", { focus: "lexer" }],
    ["ArrowDown", rows, "docs", null],
    ["ArrowUp", rows, "tests", { focus: "lexer" }],
    ["ArrowUp", rows, "root", null],
    ["Home", rows, "tests", { focus: "root" }],
    ["End", rows, "root", { focus: "docs" }],
    ["ArrowRight", rows, "lexer", { focus: "tests" }],
    ["ArrowRight", closed, "lexer", { expand: "lexer" }],
    ["ArrowRight", rows, "tests", null],
    ["ArrowLeft", rows, "lexer", { collapse: "lexer" }],
    ["ArrowLeft", closed, "lexer", { focus: "root" }],
    ["ArrowLeft", rows, "tests", { focus: "lexer" }],
    ["ArrowLeft", visibleRows(conversationTree(conversation), new Set(["root"])), "root", null],
    ["Enter", rows, "tests", { open: "tests" }],
    ["a", rows, "root", null],
    ["ArrowDown", rows, "gone", { focus: "root" }],
  ] as const)("%s on %s … %s", (key, rs, current, want) => {
    expect(treeKey(key, rs as TreeRow[], current)).toEqual(want);
  });
});

describe("handoffGraph", () => {
  it("has one node per agent, qualified by its relay, and one edge per task", () => {
    const relayOf = (slug: string) => (slug === "cat" ? "gpu-box" : "");
    const g = handoffGraph(conversation, relayOf, T + 10 * 60_000);
    expect(g.nodes.map((n) => n.id)).toEqual(["operator", "ana", "ben", "cat@gpu-box"]);
    expect(g.relays).toEqual(["gpu-box"]);
    expect(g.edges.map((e) => `${e.from}>${e.to} ${e.status} #${e.hops} ${e.durationMs / 60_000}m`)).toEqual([
      "operator>ana claimed #0 10m", // open: how long so far
      "ana>ben claimed #1 9m",
      "ben>cat@gpu-box blocked #2 2m", // ended: how long it took
      "ana>cat@gpu-box completed #1 6m",
    ]);
  });

  it("names local agents by slug", () => {
    expect(qualified("ana", () => "")).toBe("ana");
    expect(qualified("cat", () => "gpu-box")).toBe("cat@gpu-box");
    expect(taskDuration({ status: "completed", createdAt: at(5), updatedAt: at(1) }, T)).toBe(0);
  });

  it("is laid out with each remote agent inside its relay's box", () => {
    const g = handoffGraph(conversation, (slug) => (slug === "cat" || slug === "ben" ? "gpu-box" : ""), T);
    const placed = layoutGraph(g, (id) => `#1 ${id}`);
    expect(placed.nodes).toHaveLength(4);
    expect(placed.edges.every((e) => e.points.length >= 2)).toBe(true);
    const [box] = placed.clusters;
    expect(box!.relay).toBe("gpu-box");
    for (const id of ["ben@gpu-box", "cat@gpu-box"]) {
      const n = placed.nodes.find((p) => p.id === id)!;
      expect(n.x - n.width / 2).toBeGreaterThanOrEqual(box!.x);
      expect(n.x + n.width / 2).toBeLessThanOrEqual(box!.x + box!.width);
      expect(n.y).toBeGreaterThan(box!.y);
      expect(n.y).toBeLessThan(box!.y + box!.height);
    }
    const op = placed.nodes.find((p) => p.id === "operator")!;
    expect(op.x + op.width / 2 <= box!.x || op.x - op.width / 2 >= box!.x + box!.width || op.y < box!.y || op.y > box!.y + box!.height).toBe(true);
    expect(placed.width).toBeGreaterThan(0);
  });
});
