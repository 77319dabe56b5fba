// uPlot options the dashboard's charts share: axes and grid in the theme's
// colours, a category axis (one slot per agent), bars, and no uPlot legend
// or cursor (ChartFigure has the legend, the table the figures).
import type uPlot from "uplot";
import type { ThemeColors } from "./theme";

const FONT = '11.5px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** axis is an axis in the theme's colours. */
export function axis(c: ThemeColors, extra: uPlot.Axis = {}): uPlot.Axis {
  return {
    stroke: c.muted,
    font: FONT,
    grid: { stroke: c.border, width: 1 },
    ticks: { stroke: c.border, width: 1 },
    ...extra,
  };
}

/**
 * DURATION_STEPS are the tick steps of a duration axis, in ms: each one a
 * duration shortDuration prints exactly (ms below a second, then whole
 * seconds, minutes, hours), so no tick reads as another (2.5 s read "2s").
 */
export const DURATION_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
  3_600_000, 7_200_000, 14_400_000, 21_600_000, 43_200_000, 86_400_000, 172_800_000, 604_800_000,
];

/** base holds what every chart shares. */
export function base(): Pick<uPlot.Options, "legend" | "cursor" | "padding"> {
  return { legend: { show: false }, cursor: { show: false }, padding: [10, 10, 0, 4] };
}

/**
 * categoryAxis labels slots 0..n-1 with labels(), one tick each; labels is
 * read at each drawing, so new data with other agents gets their names.
 */
export function categoryAxis(c: ThemeColors, labels: () => string[], width: number): uPlot.Axis {
  return axis(c, {
    grid: { show: false },
    splits: () => labels().map((_, i) => i),
    values: (_u, splits) => {
      const room = Math.max(4, Math.floor(width / Math.max(1, labels().length) / 7));
      return splits.map((i) => short(labels()[i] ?? "", room));
    },
  });
}

/** categoryScale fits slots 0..n-1 with half a slot of room on each side. */
export function categoryScale(n: number): uPlot.Scale {
  return { time: false, range: () => [-0.5, Math.max(0, n - 0.5)] };
}

/** countScale is a y scale of counts from 0 that shows at least 0..max. */
export function countScale(max = 4): uPlot.Scale {
  return { range: (_u, _min, hi) => [0, Math.max(max, Math.ceil(hi * 1.1))] };
}

/** bars draws a series as bars of a slot's factor, to the left (-1), middle (0) or right (1) of its x. */
export function bars(U: typeof uPlot, align: -1 | 0 | 1, factor: number): uPlot.Series.PathBuilder {
  return U.paths.bars!({ align, size: [factor, 48], gap: 1 });
}

function short(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, Math.max(1, n - 1))}…`;
}
