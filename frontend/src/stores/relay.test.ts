import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ref } from "vue";
import { createRelayStore } from "./relay";
import { createToasts } from "./toasts";
import { agent, event, fakeApi, invite, iso, stats, summary, T0 } from "../test/fakes";

function setup(data: Parameters<typeof fakeApi>[0] = {}) {
  const api = fakeApi(data);
  const now = ref(T0);
  const toasts = createToasts({ timeoutMs: 0 });
  const store = createRelayStore(api, { now, toasts });
  return { api, now, toasts, store };
}

describe("relay store: snapshot", () => {
  it("loads every part of the snapshot and becomes ready", async () => {
    const { api, store } = setup({
      agents: [agent(), agent({ slug: "operator", kind: "human", displayName: "Operator" })],
      open: [summary({ id: "a" })],
      done: [summary({ id: "b", status: "completed" })],
      events: [event(2), event(1)],
      invites: [invite()],
      stats: stats({ queued: 1 }, 4),
    });
    await store.start();
    expect(store.state.status).toBe("ready");
    expect([...store.state.tasks.keys()].sort()).toEqual(["a", "b"]);
    expect(store.state.agents.size).toBe(2);
    expect(store.state.invites.size).toBe(1);
    expect(store.state.events.map((e) => e.sequence)).toEqual([2, 1]);
    expect(store.state.stats?.doneToday).toBe(4);
    expect(store.operatorSlug.value).toBe("operator");
    expect(api.tasks.list).toHaveBeenCalledWith({ statuses: ["queued", "claimed", "blocked"], limit: 500 });
    expect(api.tasks.list).toHaveBeenCalledWith({ statuses: ["completed", "cancelled"], limit: 100 });
    expect(api.listeners).toBe(1);
  });

  it("shows an error state when the first load fails, and recovers on retry", async () => {
    const { api, store } = setup();
    vi.mocked(api.agents.list).mockRejectedValueOnce(Object.assign(new Error("x"), {}));
    await store.start();
    expect(store.state.status).toBe("error");
    expect(store.state.error).not.toBe("");
    await store.load();
    expect(store.state.status).toBe("ready");
    expect(store.state.error).toBe("");
  });

  it("applies changes that arrive while the snapshot loads after it", async () => {
    const { api, store } = setup({ open: [summary({ id: "a", updatedAt: iso(0) })] });
    let release!: () => void;
    vi.mocked(api.invites.list).mockImplementationOnce(() => new Promise((r) => (release = () => r([]))));
    const started = store.start();
    api.emit({ type: "task", task: summary({ id: "a", status: "claimed", updatedAt: iso(5) }) });
    api.emit({ type: "task", task: summary({ id: "c" }) });
    release();
    await started;
    expect(store.state.tasks.get("a")?.status).toBe("claimed");
    expect(store.state.tasks.has("c")).toBe(true);
  });

  it("reloads the snapshot on resync", async () => {
    const { api, store } = setup();
    await store.start();
    vi.mocked(api.agents.list).mockResolvedValueOnce([agent({ slug: "zed" })]);
    api.emit({ type: "resync" });
    await vi.waitFor(() => expect(store.state.agents.has("zed")).toBe(true));
  });

  it("tracks the connection state", async () => {
    const { api, store } = setup();
    await store.start();
    api.connection(false);
    expect(store.state.connected).toBe(false);
    api.connection(true);
    expect(store.state.connected).toBe(true);
    store.stop();
    expect(api.listeners).toBe(0);
  });
});

describe("relay store: changes", () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] }));
  afterEach(() => vi.useRealTimers());

  it("upserts tasks, keeps the newer version, removes tasks and refreshes stats", async () => {
    const { api, store } = setup({ open: [summary({ id: "a", updatedAt: iso(10) })] });
    await store.start();
    api.emit({ type: "task", task: summary({ id: "a", status: "claimed", updatedAt: iso(5) }) });
    expect(store.state.tasks.get("a")?.status).toBe("queued"); // stale change ignored
    api.emit({ type: "task", task: summary({ id: "a", status: "claimed", updatedAt: iso(20) }) });
    expect(store.state.tasks.get("a")?.status).toBe("claimed");
    vi.mocked(api.overview.stats).mockResolvedValueOnce(stats({ claimed: 1 }));
    await vi.runAllTimersAsync();
    expect(store.state.stats?.tasks.claimed).toBe(1);
    api.emit({ type: "tasks-removed", ids: ["a"] });
    expect(store.state.tasks.has("a")).toBe(false);
  });

  it("applies agent, agent-removed, invite and settings changes", async () => {
    const { api, store } = setup({ agents: [agent()] });
    await store.start();
    api.emit({ type: "agent", agent: agent({ slug: "carol" }) });
    expect(store.state.agents.has("carol")).toBe(true);
    api.emit({ type: "agent-removed", slug: "bob" });
    expect(store.state.agents.has("bob")).toBe(false);
    // Retired (its project removed): it leaves the list at once, as on a reload.
    api.emit({ type: "agent", agent: agent({ slug: "carol", retiredAt: iso(30) }) });
    expect(store.state.agents.has("carol")).toBe(false);
    api.emit({ type: "invite", invite: invite({ id: "i9", uses: 1, agents: ["carol"] }) });
    expect(store.state.invites.get("i9")?.agents).toEqual(["carol"]);
    api.emit({ type: "settings", settings: { maxChainDepth: 7, workersPaused: true } });
    expect(store.state.settings).toEqual({ maxChainDepth: 7, workersPaused: true });
  });

  it("prepends events that match the agent filter, without duplicates", async () => {
    const { api, store } = setup({ events: [event(1, { recipientSlug: "bob" })] });
    await store.start();
    api.emit({ type: "event", event: event(2) });
    api.emit({ type: "event", event: event(2) });
    expect(store.state.events.map((e) => e.sequence)).toEqual([2, 1]);
    vi.mocked(api.events.list).mockResolvedValueOnce([event(1, { recipientSlug: "bob" })]);
    await store.setEventsAgent("bob");
    api.emit({ type: "event", event: event(3, { recipientSlug: "operator" }) });
    api.emit({ type: "event", event: event(4, { recipientSlug: "bob" }) });
    expect(store.state.events.map((e) => e.sequence)).toEqual([4, 1]);
  });

  it("loads older events with before= and stops when exhausted", async () => {
    const first = Array.from({ length: 50 }, (_, i) => event(100 - i));
    const { api, store } = setup({ events: first });
    await store.start();
    expect(store.state.eventsExhausted).toBe(false);
    vi.mocked(api.events.list).mockResolvedValueOnce([event(40), event(39)]);
    await store.loadOlderEvents();
    expect(api.events.list).toHaveBeenLastCalledWith({ agent: undefined, before: 51, limit: 50 });
    expect(store.state.events).toHaveLength(52);
    expect(store.state.eventsExhausted).toBe(true);
  });

  it("alerts when a task the operator sent completes or is blocked, once", async () => {
    const { api, store, toasts } = setup({ open: [summary({ id: "a", status: "claimed" }), summary({ id: "b", senderSlug: "bob", recipientSlug: "carol", status: "claimed" })] });
    await store.start();
    api.emit({ type: "task", task: summary({ id: "a", status: "completed", updatedAt: iso(1) }) });
    api.emit({ type: "task", task: summary({ id: "a", status: "completed", updatedAt: iso(2) }) });
    api.emit({ type: "task", task: summary({ id: "b", senderSlug: "bob", recipientSlug: "carol", status: "completed", updatedAt: iso(1) }) });
    expect(toasts.list.map((t) => t.title)).toEqual(["Done: Fix the build"]);
    api.emit({
      type: "task",
      task: summary({ id: "a", status: "blocked", updatedAt: iso(3), latestReport: { kind: "blocked", message: "Need a key", createdAt: iso(3) } }),
    });
    expect(toasts.list[1]).toMatchObject({ kind: "warning", title: "Blocked: Fix the build", body: "Need a key", taskId: "a" });
  });
});

describe("relay store: derived state", () => {
  it("lists what needs attention with a ticking clock", async () => {
    const { store, now } = setup({
      agents: [agent({ slug: "bob", lastSeenAt: iso(-30_000) }), agent({ slug: "gone", lastSeenAt: iso(-3_600_000) })],
      open: [
        summary({ id: "blocked", status: "blocked" }),
        summary({ id: "lease", status: "claimed", leaseExpiresAt: iso(60_000) }),
        summary({ id: "stale", recipientSlug: "gone", updatedAt: iso(-11 * 60_000) }),
        summary({ id: "fresh", recipientSlug: "gone", updatedAt: iso(-9 * 60_000) }),
        summary({ id: "online", recipientSlug: "bob", updatedAt: iso(-60 * 60_000) }),
      ],
    });
    await store.start();
    expect(store.attention.value.map((a) => a.task.id).sort()).toEqual(["blocked", "stale"]);
    now.value = T0 + 2 * 60_000; // the lease ran out, fresh waited 11 min, bob went offline
    expect(store.attention.value.map((a) => [a.task.id, a.reason]).sort()).toEqual([
      ["blocked", "blocked"],
      ["fresh", "recipient-offline"],
      ["lease", "lease-expired"],
      ["online", "recipient-offline"],
      ["stale", "recipient-offline"],
    ]);
  });

  it("orders agents: operator, online, then by name; reports current work", async () => {
    const { store } = setup({
      agents: [
        agent({ slug: "zoe", displayName: "Zoe", lastSeenAt: iso(-10_000) }),
        agent({ slug: "amy", displayName: "Amy", lastSeenAt: iso(-3_600_000) }),
        agent({ slug: "operator", displayName: "Operator", kind: "human", lastSeenAt: iso(-3_600_000) }),
      ],
      open: [summary({ id: "w", recipientSlug: "zoe", status: "claimed" }), summary({ id: "q", recipientSlug: "zoe" })],
    });
    await store.start();
    expect(store.agentList.value.map((a) => a.slug)).toEqual(["operator", "zoe", "amy"]);
    expect(store.onlineCount.value).toBe(1);
    const w = store.workOf("zoe");
    expect(w.claimed.map((t) => t.id)).toEqual(["w"]);
    expect(w.queued).toBe(1);
  });
});

describe("relay store: actions", () => {
  it("applies what an action returns at once", async () => {
    const { api, store } = setup({ open: [summary({ id: "a", status: "completed" })] });
    await store.start();
    await store.requestChanges("a", "More tests.");
    expect(api.tasks.requestChanges).toHaveBeenCalledWith("a", "More tests.");
    expect(store.state.tasks.get("a")?.status).toBe("queued");
    const t = await store.postTask({ recipientSlug: "bob", title: "New", instructions: "Do it", priority: 3, requiredCapabilities: [] });
    expect(store.state.tasks.get(t.id)?.title).toBe("New");
    await store.revokeInvite("i1");
    expect(store.state.invites.get("i1")?.revoked).toBe(true);
    await store.revokeToken("bob");
    expect(store.state.agents.get("bob")?.hasToken).toBe(false);
    await store.deleteAgent("bob");
    expect(store.state.agents.has("bob")).toBe(false);
  });
});
