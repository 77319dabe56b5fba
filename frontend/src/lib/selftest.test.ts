import { afterEach, describe, expect, it, vi } from "vitest";
import { inked, installSelfTest, selfTestReport, seriesColours } from "./selftest";

describe("inked", () => {
  const done: [number, number, number] = [0x1a, 0x7a, 0x42];
  const px = (...p: number[][]) => new Uint8ClampedArray(p.flat());

  it("counts the opaque pixels in a series' colour", () => {
    const rgba = px([0x1a, 0x7a, 0x42, 255], [0x1b, 0x79, 0x43, 255], [0x52, 0x59, 0x66, 255], [0, 0, 0, 0]);
    expect(inked(rgba, [done])).toBe(2);
  });

  it("counts nothing on a blank canvas, in the axes' and the grid's colours, or on a shape's blended edge", () => {
    expect(inked(new Uint8ClampedArray(4 * 100), [done])).toBe(0);
    expect(inked(px([0x52, 0x59, 0x66, 255], [0xe2, 0xe4, 0xe9, 255], [0x1a, 0x7a, 0x42, 120]), [done])).toBe(0);
    expect(inked(px([0x1a, 0x7a, 0x42, 255]), [])).toBe(0);
  });
});

describe("seriesColours", () => {
  it("reads the series' tokens of the theme", () => {
    document.documentElement.style.setProperty("--done", "#1A7A42");
    document.documentElement.style.setProperty("--accent", "#3a5ccc");
    expect(seriesColours(document)).toEqual(
      expect.arrayContaining([
        [0x1a, 0x7a, 0x42],
        [0x3a, 0x5c, 0xcc],
      ]),
    );
    document.documentElement.style.removeProperty("--done");
    document.documentElement.style.removeProperty("--accent");
  });
});

describe("selfTestReport", () => {
  afterEach(() => {
    document.body.innerHTML = "";
    location.hash = "";
  });

  it("reports the route, the text, each chart figure and the conversation tree", () => {
    location.hash = "#/activity?task=t1";
    document.body.innerHTML = `
      <h1>Activity</h1>
      <figure data-test="chart-throughput"><figcaption>Tasks per hour</figcaption><div role="img"><canvas width="0" height="0"></canvas><canvas width="30" height="20"></canvas></div></figure>
      <figure data-test="chart-open-work"><figcaption>Open work</figcaption></figure>
      <ul role="tree">
        <li role="treeitem" aria-level="1"><span class="title">Draw the relay diagram</span>
        <li role="treeitem" aria-level="2"><span class="title"> Ink the arrows </span>
      </ul>
      <svg data-test="handoff-graph"><g data-node="operator"></g><g data-node="gui-bot"></g></svg>`;
    const r = selfTestReport();
    expect(r.route).toBe("#/activity?task=t1");
    expect(r.text).toContain("Activity");
    expect(r.charts).toEqual([
      { test: "chart-throughput", canvases: 1, ink: 0, rects: [[0, 0, 0, 0]] },
      { test: "chart-open-work", canvases: 0, ink: 0, rects: [] },
    ]);
    expect(r.viewport).toEqual([innerWidth, innerHeight, devicePixelRatio]);
    expect(r.tree).toEqual(["1:Draw the relay diagram", "2:Ink the arrows"]);
    expect(r.graph).toEqual(["operator", "gui-bot"]);
  });
});

describe("installSelfTest", () => {
  type W = NonNullable<Parameters<typeof installSelfTest>[0]>;
  const fakeWindow = (report?: (s: string) => Promise<void>) =>
    ({ go: { app: report ? { SelfTest: { Report: report } } : {} }, location: { hash: "#/tasks" }, document }) as unknown as W & {
      crosschatSelfTest?: (route: string) => Promise<void>;
      location: { hash: string };
    };

  it("goes to the route asked for, then reports once there", async () => {
    const report = vi.fn(async (_s: string) => {});
    const w = fakeWindow(report);
    installSelfTest(w);
    await w.crosschatSelfTest!("#/activity");
    expect(w.location.hash).toBe("#/activity");
    expect(report).not.toHaveBeenCalled();
    await w.crosschatSelfTest!("#/activity");
    expect(report).toHaveBeenCalledOnce();
    expect(JSON.parse(report.mock.calls[0][0])).toMatchObject({ charts: [], tree: [] });
  });

  it("reports where the window is when no route is asked for", async () => {
    const report = vi.fn(async (_s: string) => {});
    const w = fakeWindow(report);
    installSelfTest(w);
    await w.crosschatSelfTest!("");
    expect(w.location.hash).toBe("#/tasks");
    expect(report).toHaveBeenCalledOnce();
  });

  it("is not there outside self-test mode, nor in a browser", () => {
    for (const w of [fakeWindow(), { location: { hash: "" }, document } as unknown as W & { crosschatSelfTest?: unknown }]) {
      installSelfTest(w);
      expect(w.crosschatSelfTest).toBeUndefined();
    }
  });
});
