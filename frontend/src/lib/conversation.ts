// A conversation's tasks shaped for the task drawer: a tree by parent
// links (root to leaves) with its keyboard model, and a graph of the agents
// and their hand-offs. Pure functions; ConversationTree.vue and
// HandoffGraph.vue draw them.
import type { ConversationTask, TaskStatus } from "../api";
import { ms } from "./time";

export interface TreeNode {
  task: ConversationTask;
  children: TreeNode[];
}

/**
 * conversationTree links tasks by their parents: roots first, each node's
 * children oldest first. A task whose parent is not among tasks (pruned,
 * or held by another relay) is a root, so no task is lost.
 */
export function conversationTree(tasks: ConversationTask[]): TreeNode[] {
  const byId = new Map<string, TreeNode>();
  for (const t of tasks) byId.set(t.id, { task: t, children: [] });
  const roots: TreeNode[] = [];
  for (const n of byId.values()) {
    const parent = n.task.parentTaskId ? byId.get(n.task.parentTaskId) : undefined;
    if (parent && parent !== n && !isAncestor(n, parent, byId)) parent.children.push(n);
    else roots.push(n);
  }
  const order = (a: TreeNode, b: TreeNode) => ms(a.task.createdAt) - ms(b.task.createdAt) || a.task.id.localeCompare(b.task.id);
  const sortAll = (list: TreeNode[]) => {
    list.sort(order);
    for (const n of list) sortAll(n.children);
  };
  sortAll(roots);
  return roots;
}

// isAncestor reports whether n is an ancestor of p by the parent links (a
// cycle in the data must not hide both tasks from the tree).
function isAncestor(n: TreeNode, p: TreeNode, byId: Map<string, TreeNode>): boolean {
  const seen = new Set<string>();
  for (let cur: TreeNode | undefined = p; cur && !seen.has(cur.task.id); ) {
    if (cur === n) return true;
    seen.add(cur.task.id);
    cur = cur.task.parentTaskId ? byId.get(cur.task.parentTaskId) : undefined;
  }
  return false;
}

/** TreeRow is one visible row of the tree with its ARIA position. */
export interface TreeRow {
  id: string;
  task: ConversationTask;
  /** aria-level: 1 for a root. */
  level: number;
  /** aria-setsize and aria-posinset among its siblings. */
  setsize: number;
  posinset: number;
  parentId?: string;
  hasChildren: boolean;
  expanded: boolean;
}

/** visibleRows flattens the tree in reading order, leaving out the descendants of collapsed nodes. */
export function visibleRows(roots: TreeNode[], collapsed: ReadonlySet<string>): TreeRow[] {
  const out: TreeRow[] = [];
  const walk = (list: TreeNode[], level: number, parentId?: string) => {
    list.forEach((n, i) => {
      const hasChildren = n.children.length > 0;
      const expanded = hasChildren && !collapsed.has(n.task.id);
      out.push({ id: n.task.id, task: n.task, level, setsize: list.length, posinset: i + 1, parentId, hasChildren, expanded });
      if (expanded) walk(n.children, level + 1, n.task.id);
    });
  };
  walk(roots, 1);
  return out;
}

/** TreeAction is what a key press on the tree does. */
export type TreeAction = { focus: string } | { expand: string } | { collapse: string } | { open: string } | null;

/**
 * treeKey is the tree's keyboard model (the WAI-ARIA tree view pattern):
 * Up and Down move along the visible rows, Home and End to the first and
 * last; Right opens a closed node or moves to the first child of an open
 * one; Left closes an open node or moves to the parent; Enter opens the
 * task. Other keys do nothing (null).
 */
export function treeKey(key: string, rows: TreeRow[], current: string): TreeAction {
  const i = rows.findIndex((r) => r.id === current);
  if (i < 0) return rows.length ? { focus: rows[0]!.id } : null;
  const row = rows[i]!;
  switch (key) {
    case "ArrowDown":
      return i + 1 < rows.length ? { focus: rows[i + 1]!.id } : null;
    case "ArrowUp":
      return i > 0 ? { focus: rows[i - 1]!.id } : null;
    case "Home":
      return { focus: rows[0]!.id };
    case "End":
      return { focus: rows[rows.length - 1]!.id };
    case "ArrowRight":
      if (!row.hasChildren) return null;
      return row.expanded ? { focus: rows[i + 1]!.id } : { expand: row.id };
    case "ArrowLeft":
      if (row.expanded) return { collapse: row.id };
      return row.parentId ? { focus: row.parentId } : null;
    case "Enter":
      return { open: row.id };
    default:
      return null;
  }
}

/** qualified names an agent in a mesh: "slug@relay" for an agent of another relay, the slug for a local one. */
export function qualified(slug: string, relayOf: (slug: string) => string): string {
  const r = relayOf(slug);
  return r ? `${slug}@${r}` : slug;
}

/** A task's duration as shown: how long it took once it ended, how long it has been open while it is. */
export function taskDuration(t: Pick<ConversationTask, "status" | "createdAt" | "updatedAt">, now: number): number {
  const end = t.status === "queued" || t.status === "claimed" ? now : ms(t.updatedAt);
  return Math.max(0, end - ms(t.createdAt));
}

export interface GraphNode {
  /** The agent's qualified name, also its label. */
  id: string;
  slug: string;
  /** The other relay it lives on; "" for a local agent. */
  relay: string;
}

export interface GraphEdge {
  /** The task of the hand-off. */
  id: string;
  from: string;
  to: string;
  title: string;
  status: TaskStatus;
  hops: number;
  durationMs: number;
}

export interface HandoffGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** The other relays with agents in the graph, by name. */
  relays: string[];
}

/**
 * handoffGraph is the conversation as agents (nodes, by qualified name)
 * and hand-offs (one edge per task, sender to recipient, oldest first).
 */
export function handoffGraph(tasks: ConversationTask[], relayOf: (slug: string) => string, now: number): HandoffGraph {
  const nodes = new Map<string, GraphNode>();
  const node = (slug: string) => {
    const id = qualified(slug, relayOf);
    if (!nodes.has(id)) nodes.set(id, { id, slug, relay: relayOf(slug) });
    return id;
  };
  const edges = [...tasks]
    .sort((a, b) => ms(a.createdAt) - ms(b.createdAt) || a.id.localeCompare(b.id))
    .map((t) => ({
      id: t.id,
      from: node(t.senderSlug),
      to: node(t.recipientSlug),
      title: t.title,
      status: t.status,
      hops: t.hops,
      durationMs: taskDuration(t, now),
    }));
  const relays = [...new Set([...nodes.values()].map((n) => n.relay).filter(Boolean))].sort();
  return { nodes: [...nodes.values()], edges, relays };
}
