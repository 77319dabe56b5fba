import { describe, expect, it } from "vitest";
import type uPlot from "uplot";
import { categoryAxis } from "./chartOptions";
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
