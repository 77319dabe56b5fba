import { describe, expect, it, vi } from "vitest";
import { CHANGE_EVENT, CONNECTION_EVENT, CSRF_HEADER, SESSION_HEADER, SESSION_KEY, createBridge, createSessionClient } from "./bridge";
import { ApiError } from "./errors";

class FakeES {
  static all: FakeES[] = [];
  url: string;
  closed = false;
  onopen: ((ev: Event) => unknown) | null = null;
  onerror: ((ev: Event) => unknown) | null = null;
  private handlers = new Map<string, ((ev: MessageEvent) => void)[]>();
  constructor(url: string) {
    this.url = url;
    FakeES.all.push(this);
  }
  addEventListener(type: string, fn: (ev: MessageEvent) => void) {
    this.handlers.set(type, [...(this.handlers.get(type) ?? []), fn]);
  }
  close() {
    this.closed = true;
  }
  open() {
    this.onopen?.(new Event("open"));
  }
  fail() {
    this.onerror?.(new Event("error"));
  }
  send(type: string, data: string) {
    for (const h of this.handlers.get(type) ?? []) h(new MessageEvent(type, { data }));
  }
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

function setup(fetchImpl?: (url: string, init?: RequestInit) => Promise<Response>) {
  FakeES.all = [];
  const timers: { fn: () => void; ms: number }[] = [];
  const fetch = vi.fn(fetchImpl ?? (async () => json(200, { ok: true })));
  const onUnauthorized = vi.fn();
  const b = createBridge({
    fetch,
    EventSource: FakeES,
    onUnauthorized,
    setTimeout: (fn, ms) => timers.push({ fn, ms }),
    clearTimeout: () => {},
    retryMs: [100, 400],
  });
  return { b, fetch, onUnauthorized, timers };
}

describe("bridge shim: calls", () => {
  it("maps window.go.app.<Service>.<Method>(args) to POST /bridge/<Service>.<Method>", async () => {
    const { b, fetch } = setup(async () => json(200, [{ id: "t1" }]));
    const out = await b.go.app.Tasks.List({ statuses: ["queued"] });
    expect(out).toEqual([{ id: "t1" }]);
    const [url, init] = fetch.mock.calls[0];
    expect(url).toBe("/bridge/Tasks.List");
    expect(init?.method).toBe("POST");
    expect(init?.credentials).toBe("same-origin");
    expect((init?.headers as Record<string, string>)[CSRF_HEADER]).toBe("1");
    expect(JSON.parse(String(init?.body))).toEqual([{ statuses: ["queued"] }]);
  });

  it("drops trailing undefined arguments and returns null for an empty body", async () => {
    const { b, fetch } = setup(async () => new Response("", { status: 200 }));
    expect(await b.go.app.Agents.Delete("bob", undefined)).toBeNull();
    expect(JSON.parse(String(fetch.mock.calls[0][1]?.body))).toEqual(["bob"]);
  });

  it("rejects with the bridge's error body as an ApiError", async () => {
    const { b, onUnauthorized } = setup(async () => json(409, { error: "agent_exists", message: "Slug taken.", details: { slug: "bob" } }));
    const err = await b.go.app.Agents.Create({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: "agent_exists", message: "Slug taken.", status: 409, details: { slug: "bob" } });
    expect(onUnauthorized).not.toHaveBeenCalled();
  });

  it("reports a lost session on 401", async () => {
    const { b, onUnauthorized } = setup(async () => json(401, { error: "unauthorized", message: "Sign in with the admin token." }));
    await expect(b.go.app.Overview.Info()).rejects.toMatchObject({ code: "unauthorized" });
    expect(onUnauthorized).toHaveBeenCalledOnce();
  });

  it("turns a failed fetch into a network error and a non-JSON failure into an http code", async () => {
    const { b } = setup(async () => {
      throw new TypeError("Failed to fetch");
    });
    await expect(b.go.app.Overview.Info()).rejects.toMatchObject({ code: "network" });
    const { b: b2 } = setup(async () => new Response("<html>bad gateway</html>", { status: 502 }));
    await expect(b2.go.app.Overview.Info()).rejects.toMatchObject({ code: "http_502", status: 502 });
  });
});

describe("bridge shim: runtime events over SSE", () => {
  it("opens /bridge/events for the first relay:change listener and delivers parsed changes", () => {
    const { b } = setup();
    const got: unknown[] = [];
    expect(FakeES.all).toHaveLength(0);
    const off = b.runtime.EventsOnMultiple(CHANGE_EVENT, (c: unknown) => got.push(c), -1);
    expect(FakeES.all).toHaveLength(1);
    expect(FakeES.all[0].url).toBe("/bridge/events");
    FakeES.all[0].send(CHANGE_EVENT, JSON.stringify({ type: "task", task: { id: "t1" } }));
    FakeES.all[0].send(CHANGE_EVENT, "not json");
    expect(got).toEqual([{ type: "task", task: { id: "t1" } }]);
    off();
    expect(FakeES.all[0].closed).toBe(true);
  });

  it("asks for a snapshot on every open and reconnects with backoff when the stream ends", async () => {
    const { b, timers, fetch } = setup(async () => json(200, { authenticated: true }));
    const got: { type: string }[] = [];
    const conn: boolean[] = [];
    b.runtime.EventsOn(CHANGE_EVENT, (c: { type: string }) => got.push(c));
    b.runtime.EventsOn(CONNECTION_EVENT, (on: boolean) => conn.push(on));
    FakeES.all[0].open();
    expect(got).toEqual([{ type: "resync" }]);
    FakeES.all[0].fail(); // the server dropped a slow client
    expect(FakeES.all[0].closed).toBe(true);
    expect(conn).toEqual([true, false]);
    expect(fetch).toHaveBeenCalledWith("/bridge/session", expect.anything()); // is the session still valid?
    expect(timers.map((t) => t.ms)).toEqual([100]);
    timers[0].fn();
    expect(FakeES.all).toHaveLength(2);
    FakeES.all[1].fail();
    expect(timers.map((t) => t.ms)).toEqual([100, 200]);
    timers[1].fn();
    FakeES.all[2].open();
    expect(got).toEqual([{ type: "resync" }, { type: "resync" }]);
    expect(conn).toEqual([true, false, true]);
  });

  it("signs out when the stream fails and the session is gone", async () => {
    const { b, onUnauthorized } = setup(async () => json(200, { authenticated: false }));
    b.runtime.EventsOn(CHANGE_EVENT, () => {});
    FakeES.all[0].fail();
    await vi.waitFor(() => expect(onUnauthorized).toHaveBeenCalled());
  });

  it("supports EventsOnce, EventsOff, EventsEmit and local runtime calls", async () => {
    const setTitle = vi.fn();
    const clipboardWrite = vi.fn(async () => {});
    FakeES.all = [];
    const b = createBridge({ fetch: vi.fn(), EventSource: FakeES, setTitle, clipboardWrite });
    const once = vi.fn();
    const many = vi.fn();
    b.runtime.EventsOnce("x", once);
    b.runtime.EventsOn("x", many);
    b.runtime.EventsEmit("x", 1, 2);
    b.runtime.EventsEmit("x", 3);
    expect(once.mock.calls).toEqual([[1, 2]]);
    expect(many.mock.calls).toEqual([[1, 2], [3]]);
    b.runtime.EventsOff("x");
    b.runtime.EventsEmit("x", 4);
    expect(many).toHaveBeenCalledTimes(2);
    b.runtime.WindowSetTitle("(2) Crosschat Relay");
    expect(setTitle).toHaveBeenCalledWith("(2) Crosschat Relay");
    expect(await b.runtime.ClipboardSetText("tok")).toBe(true);
    expect(clipboardWrite).toHaveBeenCalledWith("tok");
    expect(b.runtime.WindowMaximise()).toBeUndefined(); // window management is a no-op in a tab
    expect(FakeES.all).toHaveLength(0); // no stream without relay:change listeners
  });
});

describe("session client", () => {
  it("signs in with {token} and reports a wrong token as an ApiError", async () => {
    const fetch = vi
      .fn()
      .mockResolvedValueOnce(json(200, { authenticated: true, version: "1" }))
      .mockResolvedValueOnce(json(401, { error: "invalid_token", message: "That is not the admin token." }));
    const s = createSessionClient(fetch);
    expect(await s.signIn("good")).toEqual({ authenticated: true, version: "1" });
    expect(fetch.mock.calls[0][0]).toBe("/bridge/session");
    expect(JSON.parse(fetch.mock.calls[0][1].body)).toEqual({ token: "good" });
    await expect(s.signIn("bad")).rejects.toMatchObject({ code: "invalid_token", message: "That is not the admin token." });
  });
});

describe("browser session", () => {
  function memoryStorage() {
    const m = new Map<string, string>();
    return {
      getItem: (k: string) => m.get(k) ?? null,
      setItem: (k: string, v: string) => void m.set(k, v),
      removeItem: (k: string) => void m.delete(k),
      m,
    };
  }

  it("keeps the session per origin in storage, sends it as a header and forgets it on sign-out", async () => {
    const storage = memoryStorage();
    const fetch = vi
      .fn()
      .mockResolvedValueOnce(json(200, { authenticated: true, version: "1", session: "sess-1" }))
      .mockResolvedValueOnce(json(200, [1]))
      .mockResolvedValueOnce(json(200, { authenticated: false }));
    const s = createSessionClient(fetch, "", storage);
    expect(await s.signIn("good")).toEqual({ authenticated: true, version: "1" });
    expect(storage.m.get(SESSION_KEY)).toBe("sess-1");
    const b = createBridge({ fetch, EventSource: FakeES, storage });
    await b.go.app.Tasks.List();
    expect((fetch.mock.calls[1][1].headers as Record<string, string>)[SESSION_HEADER]).toBe("sess-1");
    await s.signOut();
    expect((fetch.mock.calls[2][1].headers as Record<string, string>)[SESSION_HEADER]).toBe("sess-1");
    expect(storage.m.has(SESSION_KEY)).toBe(false);
  });

  it("opens the change stream with a one-time ticket, never the session in the URL", async () => {
    FakeES.all = [];
    const storage = memoryStorage();
    storage.setItem(SESSION_KEY, "sess-2");
    const fetch = vi.fn(async (_url: string, _init?: RequestInit) => json(200, { ticket: "tk 1" }));
    const b = createBridge({ fetch, EventSource: FakeES, storage });
    b.runtime.EventsOn(CHANGE_EVENT, () => {});
    await vi.waitFor(() => expect(FakeES.all).toHaveLength(1));
    expect(fetch.mock.calls[0][0]).toBe("/bridge/events/ticket");
    expect(FakeES.all[0].url).toBe("/bridge/events?ticket=tk%201");
    expect(FakeES.all[0].url).not.toContain("sess-2");
  });
});
