// The charts' data shaping: the relay's aggregates (Insights.Activity,
// Insights.Agents) as the series a chart draws, the rows of its table and
// the sentence that sums it up. Pure functions.
import type { AgentLatency, AgentOutcomes, OpenWork, ThroughputBucket } from "../api";
import { ms, shortDuration } from "./time";

/** tzOffsetMinutes is this viewer's offset from UTC, east positive, as the relay's windows take it. */
export function tzOffsetMinutes(at = new Date()): number {
  return -at.getTimezoneOffset();
}

/** hourLabel is a bucket's start as the viewer's "14:00". */
export function hourLabel(start: string): string {
  return new Date(ms(start)).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

/** dayLabel is a bucket's start as the viewer's short weekday and date. */
export function dayLabel(start: string): string {
  return new Date(ms(start)).toLocaleDateString(undefined, { weekday: "short", day: "numeric" });
}

export interface Throughput {
  /** Bucket starts, Unix seconds (uPlot's time axis). */
  x: number[];
  posted: number[];
  completed: number[];
  blocked: number[];
  totals: { posted: number; completed: number; blocked: number };
}

/** throughput is the per-hour buckets as series, oldest first. */
export function throughput(buckets: ThroughputBucket[]): Throughput {
  const out: Throughput = { x: [], posted: [], completed: [], blocked: [], totals: { posted: 0, completed: 0, blocked: 0 } };
  for (const b of buckets) {
    out.x.push(ms(b.start) / 1000);
    out.posted.push(b.posted);
    out.completed.push(b.completed);
    out.blocked.push(b.blocked);
    out.totals.posted += b.posted;
    out.totals.completed += b.completed;
    out.totals.blocked += b.blocked;
  }
  return out;
}

/** throughputSummary is the throughput chart in one sentence. */
export function throughputSummary(t: Throughput): string {
  const { posted, completed, blocked } = t.totals;
  if (!posted && !completed && !blocked) return "No tasks posted, completed or blocked in the last 24 hours.";
  let peak = -1;
  let at = 0;
  t.posted.forEach((p, i) => {
    const n = p + t.completed[i]! + t.blocked[i]!;
    if (n > peak) [peak, at] = [n, i];
  });
  const hour = new Date(t.x[at]! * 1000).toISOString();
  return `In the last 24 hours: ${plural(posted, "task")} posted, ${completed} completed, ${blocked} blocked; busiest hour from ${hourLabel(hour)}.`;
}

export interface LatencyRow {
  slug: string;
  /** The agent's name as shown (qualified in a mesh). */
  label: string;
  claim: AgentLatency["claim"];
  finish: AgentLatency["finish"];
}

/** latencyRows are the agents with any claimed task, by label. */
export function latencyRows(latencies: AgentLatency[], label: (slug: string) => string): LatencyRow[] {
  return latencies
    .filter((l) => l.claim.count > 0)
    .map((l) => ({ slug: l.slug, label: label(l.slug), claim: l.claim, finish: l.finish }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

/** latencySummary names the slowest agent to claim and to finish, by median. */
export function latencySummary(rows: LatencyRow[]): string {
  if (!rows.length) return "No task was claimed in the last 7 days.";
  const slowest = (pick: (r: LatencyRow) => number) => rows.reduce((a, b) => (pick(b) > pick(a) ? b : a));
  const claim = slowest((r) => r.claim.medianMs);
  const parts = [`Slowest to claim: ${claim.label} (median ${shortDuration(claim.claim.medianMs)})`];
  const finishing = rows.filter((r) => r.finish.count > 0);
  if (finishing.length) {
    const fin = finishing.reduce((a, b) => (b.finish.medianMs > a.finish.medianMs ? b : a));
    parts.push(`slowest to finish: ${fin.label} (median ${shortDuration(fin.finish.medianMs)})`);
  }
  return `${parts.join("; ")}.`;
}

export interface OpenRow {
  slug: string;
  label: string;
  queued: number;
  claimed: number;
  blocked: number;
  total: number;
}

/** openRows are the agents with open work, most first. */
export function openRows(work: OpenWork[], label: (slug: string) => string): OpenRow[] {
  return work
    .map((w) => ({ slug: w.slug, label: label(w.slug), queued: w.queued, claimed: w.claimed, blocked: w.blocked, total: w.queued + w.claimed + w.blocked }))
    .filter((r) => r.total > 0)
    .sort((a, b) => b.total - a.total || a.label.localeCompare(b.label));
}

/**
 * stacked are the cumulative series of a stacked bar chart drawn back to
 * front: each later series is drawn over the earlier, so the first holds
 * the whole bar (queued + claimed + blocked) and the last the bottom part.
 */
export function stacked(rows: OpenRow[]): { total: number[]; claimedAndQueued: number[]; queued: number[] } {
  return {
    total: rows.map((r) => r.total),
    claimedAndQueued: rows.map((r) => r.queued + r.claimed),
    queued: rows.map((r) => r.queued),
  };
}

/** openSummary is the open work in one sentence. */
export function openSummary(rows: OpenRow[]): string {
  if (!rows.length) return "No open work: every task is finished.";
  const sum = (k: "queued" | "claimed" | "blocked") => rows.reduce((n, r) => n + r[k], 0);
  return `${plural(sum("queued") + sum("claimed") + sum("blocked"), "open task")} across ${plural(rows.length, "agent")}: ${sum("queued")} queued, ${sum("claimed")} in progress, ${sum("blocked")} blocked. Most: ${rows[0]!.label} (${rows[0]!.total}).`;
}

export interface AgentTrend {
  /** Completed tasks per day, oldest first. */
  completed: number[];
  days: string[];
  totalCompleted: number;
  totalBlocked: number;
  /** The share of its ended tasks that ended blocked, 0..1; null when none ended. */
  blockedShare: number | null;
}

/** agentTrend is one agent's sparkline and blocked share; days with nothing are zeros. */
export function agentTrend(outcomes: AgentOutcomes | undefined, days: number): AgentTrend {
  const buckets = outcomes?.buckets ?? [];
  const completed = buckets.length ? buckets.map((b) => b.completed) : Array<number>(days).fill(0);
  const totalCompleted = outcomes?.completed ?? 0;
  const totalBlocked = outcomes?.blocked ?? 0;
  const ended = totalCompleted + totalBlocked;
  return { completed, days: buckets.map((b) => b.start), totalCompleted, totalBlocked, blockedShare: ended ? totalBlocked / ended : null };
}

/** percent is a share as "12 %". */
export function percent(share: number): string {
  return `${Math.round(share * 100)} %`;
}

/** plural is "1 task", "3 tasks". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * throttle calls fn at most once every ms: the first call runs at once, a
 * call during the pause runs once at its end (later calls fold into it).
 */
export function throttle(fn: () => void, wait: number) {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let pending = false;
  const fire = () => {
    timer = null;
    if (!pending) return;
    pending = false;
    fn();
    timer = setTimeout(fire, wait);
  };
  return {
    call() {
      if (timer) {
        pending = true;
        return;
      }
      fn();
      timer = setTimeout(fire, wait);
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = null;
      pending = false;
    },
  };
}
