// The hand-off graph laid out by dagre (layered drawing of a directed graph,
// cycles included: an agent may hand work back). Agents of another relay
// sit in a box of their relay (a dagre cluster). HandoffGraph.vue draws the
// result as SVG.
import { graphlib, layout } from "@dagrejs/dagre";
import type { HandoffGraph } from "./conversation";

export interface PlacedNode {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  id: string;
  points: { x: number; y: number }[];
  /** Where the label's centre goes. */
  labelX: number;
  labelY: number;
}

export interface PlacedCluster {
  relay: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  clusters: PlacedCluster[];
  width: number;
  height: number;
}

/** Sizes of the drawing, in SVG units (CSS pixels at 100 %). */
export const NODE_HEIGHT = 28;
export const CHAR_WIDTH = 7.2;
export const LABEL_HEIGHT = 16;

/** nodeWidth fits a label of text at the drawing's font size. */
export function nodeWidth(text: string): number {
  return Math.round(Math.max(56, text.length * CHAR_WIDTH + 20));
}

/**
 * layoutKey is everything layoutGraph's answer depends on: the agents with
 * their relays, and each hand-off's ends and the text its label is sized
 * for. A caller lays a graph out again only when it changes (dagre takes
 * most of a second on a conversation of 500 tasks, so not on every tick of
 * the clock that moves the open tasks' durations).
 */
export function layoutKey(graph: HandoffGraph, edgeLabel: (id: string) => string): string {
  return JSON.stringify([graph.relays, graph.nodes.map((n) => [n.id, n.relay]), graph.edges.map((e) => [e.id, e.from, e.to, edgeLabel(e.id)])]);
}

/** layoutGraph places the graph's nodes, edges (with their labels) and relay boxes, top to bottom. */
export function layoutGraph(graph: HandoffGraph, edgeLabel: (id: string) => string): GraphLayout {
  const g = new graphlib.Graph({ directed: true, multigraph: true, compound: graph.relays.length > 0 });
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, edgesep: 12, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const relay of graph.relays) g.setNode(cluster(relay), { label: relay, paddingTop: 20 });
  for (const n of graph.nodes) {
    g.setNode(n.id, { width: nodeWidth(n.id), height: NODE_HEIGHT });
    if (n.relay) g.setParent(n.id, cluster(n.relay));
  }
  for (const e of graph.edges) {
    const text = edgeLabel(e.id);
    g.setEdge(e.from, e.to, { width: Math.round(text.length * CHAR_WIDTH * 0.9 + 8), height: LABEL_HEIGHT, labelpos: "c" }, e.id);
  }
  layout(g);
  const nodes: PlacedNode[] = graph.nodes.map((n) => {
    const v = g.node(n.id);
    return { id: n.id, x: v.x, y: v.y, width: v.width, height: v.height };
  });
  const edges: PlacedEdge[] = graph.edges.map((e) => {
    const v = g.edge({ v: e.from, w: e.to, name: e.id });
    const pts = v.points ?? [];
    const mid = pts[Math.floor(pts.length / 2)] ?? { x: 0, y: 0 };
    return { id: e.id, points: pts.map((p: { x: number; y: number }) => ({ x: p.x, y: p.y })), labelX: v.x ?? mid.x, labelY: v.y ?? mid.y };
  });
  const clusters: PlacedCluster[] = graph.relays.map((relay) => {
    const v = g.node(cluster(relay));
    return { relay, x: v.x - v.width / 2, y: v.y - v.height / 2, width: v.width, height: v.height };
  });
  const box = g.graph();
  return { nodes, edges, clusters, width: Math.ceil(box.width ?? 0), height: Math.ceil(box.height ?? 0) };
}

function cluster(relay: string): string {
  return `relay\u0000${relay}`;
}
