import { afterEach, describe, expect, it, vi } from "vitest";
import { agentTrend, latencyRows, latencySummary, openRows, openSummary, percent, stacked, throttle, throughput, throughputSummary } from "./insights";

const T = Date.parse("2026-03-01T12:00:00.000Z");
const hour = (i: number) => new Date(T + i * 3_600_000).toISOString();
const d = (count: number, medianMs = 0, p90Ms = 0) => ({ count, medianMs, p90Ms });

describe("throughput", () => {
  it("turns hourly buckets into series on a time axis with totals", () => {
    const t = throughput([
      { start: hour(0), posted: 2, completed: 1, blocked: 0 },
      { start: hour(1), posted: 5, completed: 3, blocked: 1 },
    ]);
    expect(t.x).toEqual([T / 1000, T / 1000 + 3600]);
    expect([t.posted, t.completed, t.blocked]).toEqual([
      [2, 5],
      [1, 3],
      [0, 1],
    ]);
    expect(t.totals).toEqual({ posted: 7, completed: 4, blocked: 1 });
    expect(throughputSummary(t)).toMatch(/^In the last 24 hours: 7 tasks posted, 4 completed, 1 blocked; busiest hour from /);
  });

  it("says so when nothing happened", () => {
    expect(throughputSummary(throughput([{ start: hour(0), posted: 0, completed: 0, blocked: 0 }]))).toBe(
      "No tasks posted, completed or blocked in the last 24 hours.",
    );
  });
});

describe("latencyRows", () => {
  it("keeps agents that claimed anything, by label, and names the slowest", () => {
    const rows = latencyRows(
      [
        { slug: "ben", claim: d(4, 120_000, 300_000), finish: d(3, 60_000, 90_000) },
        { slug: "idle", claim: d(0), finish: d(0) },
        { slug: "ana", claim: d(2, 5_000, 8_000), finish: d(2, 600_000, 900_000) },
      ],
      (s) => `${s}!`,
    );
    expect(rows.map((r) => r.label)).toEqual(["ana!", "ben!"]);
    expect(latencySummary(rows)).toBe("Slowest to claim: ben! (median 2m 00s); slowest to finish: ana! (median 10m 00s).");
    expect(latencySummary([])).toBe("No task was claimed in the last 7 days.");
  });
});

describe("openRows and stacked", () => {
  it("orders agents by open work and stacks the states back to front", () => {
    const rows = openRows(
      [
        { slug: "ana", queued: 1, claimed: 0, blocked: 0 },
        { slug: "cat", queued: 1, claimed: 1, blocked: 2 },
        { slug: "done", queued: 0, claimed: 0, blocked: 0 },
      ],
      (s) => s,
    );
    expect(rows.map((r) => [r.label, r.total])).toEqual([
      ["cat", 4],
      ["ana", 1],
    ]);
    expect(stacked(rows)).toEqual({ total: [4, 1], claimedAndQueued: [2, 1], queued: [1, 1] });
    expect(openSummary(rows)).toBe("5 open tasks across 2 agents: 2 queued, 1 in progress, 2 blocked. Most: cat (4).");
    expect(openSummary([])).toBe("No open work: every task is finished.");
  });
});

describe("agentTrend", () => {
  it("gives the days' completions and the share of ended tasks that ended blocked", () => {
    const t = agentTrend(
      { slug: "cat", completed: 3, blocked: 1, buckets: [0, 1, 0, 0, 2, 0, 0].map((c, i) => ({ start: hour(24 * i), completed: c, blocked: i === 4 ? 1 : 0 })) },
      7,
    );
    expect(t.completed).toEqual([0, 1, 0, 0, 2, 0, 0]);
    expect(t.blockedShare).toBe(0.25);
    expect(percent(t.blockedShare!)).toBe("25 %");
  });

  it("is seven empty days for an agent without outcomes", () => {
    expect(agentTrend(undefined, 7)).toMatchObject({ completed: [0, 0, 0, 0, 0, 0, 0], blockedShare: null, totalCompleted: 0 });
  });
});

describe("throttle", () => {
  afterEach(() => vi.useRealTimers());

  it("runs at once, then folds the calls of the pause into one at its end", () => {
    vi.useFakeTimers();
    const fn = vi.fn();
    const t = throttle(fn, 1000);
    t.call();
    expect(fn).toHaveBeenCalledTimes(1);
    t.call();
    t.call();
    t.call();
    vi.advanceTimersByTime(999);
    expect(fn).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(5000); // nothing pending: no more calls
    expect(fn).toHaveBeenCalledTimes(2);
    t.call();
    expect(fn).toHaveBeenCalledTimes(3);
    t.call();
    t.cancel();
    vi.advanceTimersByTime(5000);
    expect(fn).toHaveBeenCalledTimes(3);
  });
});
