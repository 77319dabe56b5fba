import { afterEach, describe, expect, it, vi } from "vitest";

type W = Window & { go?: unknown };

/** fakeGo records every binding call as [Service.Method, ...args]. */
function fakeGo(calls: unknown[][]) {
  const svc = (name: string) =>
    new Proxy({}, { get: (_t, m) => (...a: unknown[]) => (calls.push([`${name}.${String(m)}`, ...a]), Promise.resolve({})) });
  return { app: { Agents: svc("Agents"), Invites: svc("Invites"), Overview: svc("Overview") } };
}

async function callAll(calls: unknown[][]) {
  const { api } = await import("./index");
  await api.invites.create({ expiresInHours: 1 });
  await api.agents.create({ slug: "a", displayName: "A", modelSlug: "m", capabilities: ["x"] });
  await api.agents.rotateToken("a");
  await api.overview.info();
  return calls.map((c) => [c[0], c[c.length - 1]]);
}

afterEach(() => {
  delete (window as W).go;
  vi.resetModules();
});

// Each test imports the api module afresh (its inBrowser is fixed at import);
// on a busy machine that takes longer than vitest's default 5 s.
const IMPORT_TIMEOUT_MS = 60_000;

describe("the address the relay names to agents", () => {
  it("is the dashboard's own origin in a browser", async () => {
    vi.resetModules();
    const calls: unknown[][] = [];
    const { api } = await import("./index"); // no Wails runtime: a browser
    void api;
    (window as W).go = fakeGo(calls); // what installShim does
    const o = window.location.origin;
    expect(o).toMatch(/^https?:\/\//);
    expect(await callAll(calls)).toEqual([
      ["Invites.CreateAt", o],
      ["Agents.CreateAt", o],
      ["Agents.RotateTokenAt", o],
      ["Overview.InfoAt", o],
    ]);
  }, IMPORT_TIMEOUT_MS);

  it("is left to the relay in the native window", async () => {
    vi.resetModules();
    const calls: unknown[][] = [];
    (window as W).go = fakeGo(calls); // the Wails runtime is there before the app loads
    expect(await callAll(calls)).toEqual([
      ["Invites.CreateAt", ""],
      ["Agents.CreateAt", ""],
      ["Agents.RotateTokenAt", ""],
      ["Overview.InfoAt", ""],
    ]);
  }, IMPORT_TIMEOUT_MS);
});
