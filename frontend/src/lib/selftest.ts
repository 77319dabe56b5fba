// The native window's self-test, for CI (.ci/gui.sh). When the app starts
// with CROSSCHAT_SELFTEST set, its shell calls window.crosschatSelfTest every
// second (app/shell/selftest.go), with the route CI asked for. If the window
// is elsewhere it goes there; otherwise it reports what the page shows
// through the bound SelfTest.Report, which is bound in that mode only: the
// page's text and route, each chart's pixels in a series' colour (a blank
// canvas, or one with axes and no series, has none), and the conversation
// tree's items.
//
// A canvas drawn but not shown (WebKitGTK's compositing with hardware
// acceleration, see app/shell/desktop.go) the page cannot see: CI checks
// the screen at the canvases' places (rects, viewport) for that.

/** The theme's tokens the charts draw their series in (components/charts). */
export const SERIES_TOKENS = ["accent", "queued", "claimed", "blocked", "done"] as const;

/** ChartInk is one chart figure as drawn. */
export interface ChartInk {
  /** The figure's data-test name (chart-throughput, …). */
  test: string;
  /** Its canvases of a non-zero size. */
  canvases: number;
  /** Their pixels in one of the series' colours. */
  ink: number;
  /** Where they are in the viewport, in CSS pixels: [x, y, width, height] each. */
  rects: number[][];
}

/** SelfTestReport is what the page reports. */
export interface SelfTestReport {
  route: string;
  text: string;
  charts: ChartInk[];
  /** The conversation tree's items, in order, as "level:title". */
  tree: string[];
  /** The agents the hand-off graph draws. */
  graph: string[];
  /** The viewport: [innerWidth, innerHeight, devicePixelRatio]. */
  viewport: number[];
  /** The webview's language (navigator.language). */
  language: string;
}

type RGB = [number, number, number];

/** seriesColours are the series' colours in doc's theme. */
export function seriesColours(doc: Document): RGB[] {
  const css = getComputedStyle(doc.documentElement);
  const ctx = doc.createElement("canvas").getContext("2d");
  const out: RGB[] = [];
  for (const t of SERIES_TOKENS) {
    let c = css.getPropertyValue(`--${t}`).trim();
    if (ctx) {
      ctx.fillStyle = c; // as a 2D context gives it back: #rrggbb
      c = String(ctx.fillStyle);
    }
    const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(c);
    if (m) out.push([parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)]);
  }
  return out;
}

/**
 * inked counts the opaque pixels of rgba (a canvas's RGBA bytes) whose
 * colour is one of colours, give or take 2 in each channel: a series'
 * stroke or fill, not the edge of a shape blended into the background,
 * nor an axis, a grid line or a label.
 */
export function inked(rgba: ArrayLike<number>, colours: RGB[]): number {
  let n = 0;
  for (let i = 0; i + 3 < rgba.length; i += 4) {
    if (rgba[i + 3] < 250) continue;
    if (colours.some(([r, g, b]) => Math.abs(rgba[i] - r) <= 2 && Math.abs(rgba[i + 1] - g) <= 2 && Math.abs(rgba[i + 2] - b) <= 2)) n++;
  }
  return n;
}

function canvasInk(c: HTMLCanvasElement, colours: RGB[]): number {
  const ctx = c.getContext("2d");
  return ctx ? inked(ctx.getImageData(0, 0, c.width, c.height).data, colours) : 0;
}

/** selfTestReport reads what doc shows. */
export function selfTestReport(doc: Document = document): SelfTestReport {
  const colours = seriesColours(doc);
  const charts = [...doc.querySelectorAll<HTMLElement>("figure[data-test]")].map((fig) => {
    const canvases = [...fig.querySelectorAll("canvas")].filter((c) => c.width > 0 && c.height > 0);
    const rects = canvases.map((c) => {
      const r = c.getBoundingClientRect();
      return [r.x, r.y, r.width, r.height].map(Math.round);
    });
    return { test: fig.dataset.test ?? "", canvases: canvases.length, ink: canvases.reduce((n, c) => n + canvasInk(c, colours), 0), rects };
  });
  const tree = [...doc.querySelectorAll('[role="tree"] [role="treeitem"]')].map(
    (el) => `${el.getAttribute("aria-level")}:${el.querySelector(".title")?.textContent?.trim() ?? ""}`,
  );
  const graph = [...doc.querySelectorAll("[data-test=handoff-graph] [data-node]")].map((el) => el.getAttribute("data-node") ?? "");
  const view = doc.defaultView;
  return {
    route: view?.location.hash ?? "",
    text: doc.body.innerText ?? doc.body.textContent ?? "",
    charts,
    tree,
    graph,
    viewport: [view?.innerWidth ?? 0, view?.innerHeight ?? 0, view?.devicePixelRatio ?? 1],
    language: view?.navigator.language ?? "",
  };
}

type SelfTestWindow = Pick<Window, "location" | "document"> & {
  go?: { app?: { SelfTest?: { Report?: (text: string) => Promise<void> } } };
  crosschatSelfTest?: (route: string) => Promise<void>;
};

/**
 * installSelfTest defines window.crosschatSelfTest for the app shell to
 * call, in self-test mode only (SelfTest bound).
 */
export function installSelfTest(w: SelfTestWindow = window): void {
  if (!w.go?.app?.SelfTest) return;
  w.crosschatSelfTest = async (route: string) => {
    const report = w.go?.app?.SelfTest?.Report;
    if (!report) return;
    if (route && w.location.hash !== route) {
      w.location.hash = route;
      return; // reported at the next call, once the route has been drawn
    }
    await report(JSON.stringify(selfTestReport(w.document)));
  };
}
