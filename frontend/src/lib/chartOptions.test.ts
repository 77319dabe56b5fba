import { describe, expect, it } from "vitest";
import type uPlot from "uplot";
import { DURATION_STEPS, categoryAxis } from "./chartOptions";
import { tickDuration } from "./time";
import type { ThemeColors } from "./theme";

describe("categoryAxis", () => {
  it("names the slots from the labels of the latest data, shortened to the room a slot has", () => {
    let labels = ["ana", "ben"];
    const ax = categoryAxis({} as ThemeColors, () => labels, 400);
    const values = ax.values as (u: uPlot, splits: number[]) => string[];
    const splits = ax.splits as () => number[];
    expect(values({} as uPlot, splits())).toEqual(["ana", "ben"]);
    labels = ["cat", "a-very-long-agent-slug@gpu-box"]; // other agents, the same count: no new chart
    expect(values({} as uPlot, splits())).toEqual(["cat", "a-very-long-agent-slug@gpu-…"]); // 400 px: 28 characters a slot
    const narrow = categoryAxis({} as ThemeColors, () => labels, 120).values as (u: uPlot, s: number[]) => string[];
    expect(narrow({} as uPlot, [1])[0]).toBe("a-very-…"); // 120 px: 8
  });
});

describe("DURATION_STEPS", () => {
  it("give ticks tickDuration prints exactly, so each reads as its own value", () => {
    for (const step of DURATION_STEPS) {
      for (const k of [1, 2, 3, 4, 5]) {
        const v = step * k;
        const printed = tickDuration(v);
        // Read back: the label names v to the unit it shows.
        const back = [...printed.matchAll(/([\d.]+)(ms|d|h|m|s)/g)].reduce(
          (sum, [, n, u]) => sum + Number(n) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[u as "ms"],
          0,
        );
        expect(Math.round(back), `${v} ms printed ${printed}`).toBe(v);
      }
    }
  });
});
