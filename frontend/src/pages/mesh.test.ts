import { afterEach, describe, expect, it, vi } from "vitest";
import { flushPromises, mount } from "@vue/test-utils";
import { ApiError, type MeshStatus } from "../api";
import MeshPage from "./MeshPage.vue";
import SettingsPage from "./SettingsPage.vue";
import TaskCard from "../components/TaskCard.vue";
import AgentCard from "../components/AgentCard.vue";
import { createMesh, linkText, parseUrls, relayActions, relayMarker, remoteRelay } from "../stores/mesh";
import { agent, fakeApi, iso, meshRelay, meshSettings, meshStatus, summary, T0 } from "../test/fakes";
import { withStores } from "../test/mount";

afterEach(() => {
  document.body.innerHTML = "";
  vi.useRealTimers();
});

const joined = (p: Partial<MeshStatus> = {}): MeshStatus =>
  meshStatus({
    enabled: true,
    relayId: "a1",
    relayName: "laptop",
    link: "connected",
    ready: true,
    server: "nats://127.0.0.1:4222",
    outboxDepth: 2,
    consumerLag: 5,
    published: 10,
    applied: 7,
    relays: [
      meshRelay({ id: "a1", name: "laptop", address: "http://localhost:4318/mcp", online: true, lastSeen: iso(-5000), agents: 1, outboxDepth: 2, consumerLag: 5, self: true }),
      meshRelay({ id: "b2", name: "gpu-box", address: "http://gpu:4318/mcp", online: false, lastSeen: iso(-600_000), agents: 2, outboxDepth: 0, consumerLag: 3 }),
    ],
    ...p,
  });

describe("MeshPage", () => {
  it("says plainly that the relay is not in a mesh, and how to join one", async () => {
    const { mount: m, api } = await withStores();
    const w = m(MeshPage);
    await flushPromises();
    const box = w.find('[data-test="mesh-not-joined"]');
    expect(box.exists()).toBe(true);
    expect(box.text()).toContain("Not joined");
    expect(box.text()).toContain("--nats");
    expect(api.mesh.agents).not.toHaveBeenCalled();
    expect(w.find('[data-test="mesh-relays"]').exists()).toBe(false);
    w.unmount();
  });

  it("lists the relays with their state, lag and outbox, and the agents under their relay", async () => {
    const { mount: m, api } = await withStores({ mesh: joined() });
    vi.mocked(api.mesh.agents).mockResolvedValue([
      { slug: "zed", displayName: "Zed", modelSlug: "m1", capabilities: [], online: true, relayId: "b2", relay: "gpu-box", local: false },
      { slug: "alice", displayName: "Alice", modelSlug: "m2", capabilities: [], online: false, relayId: "b2", relay: "gpu-box", local: false },
      { slug: "bob", displayName: "Bob", modelSlug: "m3", capabilities: [], online: true, relayId: "a1", relay: "laptop", local: true },
    ]);
    const w = m(MeshPage);
    await flushPromises();
    expect(w.find('[data-test="mesh-link"]').text()).toBe("Connected");
    expect(w.find('[data-test="mesh-self"]').text()).toContain("laptop");
    const rows = w.findAll('[data-test="mesh-relays"] tbody tr');
    expect(rows.map((r) => r.attributes("data-relay"))).toEqual(["laptop", "gpu-box"]);
    expect(rows[0]!.text()).toContain("This relay");
    expect(rows[1]!.text()).toContain("offline");
    expect(rows[1]!.findAll("td")[4]!.text()).toBe("10 min ago");
    expect(rows[1]!.findAll("td.n").map((c) => c.text())).toEqual(["2", "0", "3"]);
    const agents = w.findAll('[data-test="mesh-agents"] tbody tr');
    expect(agents.map((r) => r.attributes("data-mesh-agent"))).toEqual(["alice", "zed", "bob"]);
    expect(agents[0]!.text()).toContain("gpu-box");
    expect(agents[1]!.find("td").text()).toBe(""); // the relay's name once per group
    w.unmount();
  });

  it("shows a lost link as a warning", () => {
    expect(linkText(joined({ link: "reconnecting" }))).toBe("Reconnecting");
    expect(linkText(joined({ ready: false }))).toBe("Connected, setting up");
    expect(linkText(meshStatus())).toBe("Not joined");
  });

  it("reads the mesh again while open, and stops when closed", async () => {
    vi.useFakeTimers();
    const api = fakeApi({ mesh: joined() });
    const mesh = createMesh(api, 1000);
    mesh.start();
    await vi.advanceTimersByTimeAsync(2500);
    expect(vi.mocked(api.mesh.status).mock.calls.length).toBe(3);
    vi.mocked(api.mesh.status).mockRejectedValueOnce(new ApiError("internal_error", "NATS is down"));
    await vi.advanceTimersByTimeAsync(1000);
    expect(mesh.state.error).toContain("NATS is down");
    expect(mesh.state.status?.relayName).toBe("laptop"); // the last good answer stays
    mesh.stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(vi.mocked(api.mesh.status).mock.calls.length).toBe(4);
  });
});

describe("mesh settings", () => {
  it("saves the NATS settings for the next start, and says so", async () => {
    const { mount: m, api } = await withStores({ meshSettings: { saved: meshSettings(), source: "none", applied: true } });
    const w = m(SettingsPage);
    await flushPromises();
    const sec = w.find('[data-test="mesh-settings"]');
    expect(sec.find('[data-test="mesh-source"]').text()).toContain("not in a mesh");
    expect(sec.find('button[type="submit"]').attributes("disabled")).toBeDefined();
    await sec.find('input[name="urls"]').setValue(" nats://a:4222,nats://b:4222 nats://c:4222 ");
    await sec.find('input[name="creds"]').setValue("/etc/team.creds");
    await sec.find("form").trigger("submit");
    await flushPromises();
    expect(api.mesh.saveSettings).toHaveBeenCalledWith({
      urls: ["nats://a:4222", "nats://b:4222", "nats://c:4222"],
      creds: "/etc/team.creds",
      nkey: "",
      tlsCa: "",
      embed: "",
      name: "",
      strict: false,
    });
    expect(w.find('[data-test="mesh-source"]').text()).toContain("apply at the next start");
    w.unmount();
  });

  it("shows the relay's refusal (from a browser elsewhere: this computer only)", async () => {
    const { mount: m, api } = await withStores();
    vi.mocked(api.mesh.settings).mockRejectedValue(new ApiError("local_only", "Only on the relay's own computer."));
    const w = m(SettingsPage);
    await flushPromises();
    expect(w.find('[data-test="mesh-settings"] [role="alert"]').text()).toContain("Only on the relay's own computer.");
    w.unmount();
  });

  it("shows why saved settings did not join", async () => {
    const { mount: m } = await withStores({
      meshSettings: { saved: meshSettings({ embed: "127.0.0.1:4222", nkey: "/gone" }), source: "none", applied: true, error: "mesh: nkey /gone: no such file" },
    });
    const w = m(SettingsPage);
    await flushPromises();
    expect(w.find('[data-test="mesh-settings"]').text()).toContain("did not join a mesh: mesh: nkey /gone");
    expect((w.find('input[name="embed"]').element as HTMLInputElement).value).toBe("127.0.0.1:4222");
    w.unmount();
  });
});

describe("remote marks", () => {
  const agents = new Map([
    ["operator", agent({ slug: "operator", kind: "human", relay: "laptop" })],
    ["bob", agent({ slug: "bob", relay: "laptop" })],
    ["gpu", agent({ slug: "gpu", relay: "gpu-box" })],
  ]);

  it("names another relay's agents only", () => {
    const of = relayMarker(agents, "operator");
    expect(["operator", "bob", "gpu", "nobody"].map(of)).toEqual(["", "", "gpu-box", ""]);
    expect(remoteRelay(agent({ relay: "gpu-box" }), undefined)).toBe(""); // not in a mesh
    expect(parseUrls(" a, b\nc ,,")).toEqual(["a", "b", "c"]);
  });

  it("marks a task to or from another relay's agent on its card", () => {
    const of = relayMarker(agents, "operator");
    const w = mount(TaskCard, { props: { task: summary({ senderSlug: "bob", recipientSlug: "gpu" }), now: T0, relayOf: of } });
    expect(w.find('[data-test="recipient-relay"]').text()).toBe("@gpu-box");
    expect(w.find('[data-test="sender-relay"]').exists()).toBe(false);
    const local = mount(TaskCard, { props: { task: summary(), now: T0, relayOf: of } });
    expect(local.find(".relay").exists()).toBe(false);
  });

  it("marks another relay's agent on its card", () => {
    const w = mount(AgentCard, {
      props: { agent: agent({ slug: "gpu", relay: "gpu-box" }), now: T0, isOperator: false, work: { claimed: [], queued: 0 }, remoteRelay: "gpu-box" },
    });
    expect(w.find('[data-test="agent-relay"]').text()).toBe("on gpu-box");
  });
});

describe("MeshPage trust", () => {
  const pending = () =>
    joined({
      relays: [
        meshRelay({ id: "a1", name: "laptop", self: true }),
        meshRelay({ id: "c3", name: "stranger", state: "pending", fingerprint: "SHA256:c3key" }),
      ],
      held: [
        { msgId: "m1", relayId: "c3", relay: "stranger", reason: "untrusted", taskId: "t-held", title: "Build it", sender: "operator@stranger", recipient: "bee", receivedAt: iso(-1000) },
      ],
      refused: { signature: 2, to: 0 },
      refusals: ["2026-03-01T12:00:00Z signature: bad (from relay c3)"],
    });

  it("shows a pending relay with its fingerprint, its held task, and Trust and Block buttons that act by id", async () => {
    const { mount: m, api } = await withStores({ mesh: pending() });
    const w = m(MeshPage);
    await flushPromises();
    const row = w.find('[data-relay="stranger"]');
    expect(row.text()).toContain("Pending approval");
    expect(row.text()).toContain("SHA256:c3key");
    expect(w.find('[data-relay="laptop"]').find("button").exists()).toBe(false);
    expect(w.find('[data-held="t-held"]').text()).toContain("operator@stranger");
    expect(w.find('[data-held="t-held"]').text()).toContain("Waits until the relay is trusted");
    expect(w.find('[data-test="mesh-refused"]').text()).toContain("2 signature");
    const buttons = row.findAll("button");
    expect(buttons.map((b) => b.text())).toEqual(["Trust", "Block"]);
    await buttons[0].trigger("click");
    await flushPromises();
    expect(api.mesh.trust).toHaveBeenCalledWith("c3", "SHA256:c3key");
    expect(api.mesh.status).toHaveBeenCalledTimes(2);
    await row.findAll("button")[1].trigger("click");
    await flushPromises();
    expect(api.mesh.block).toHaveBeenCalledWith("c3");
    w.unmount();
  });

  it("trusts exactly the key it shows: the first-seen key, or the new key with its own button", async () => {
    const st = pending();
    st.relays[1] = meshRelay({ id: "c3", name: "stranger", state: "pending", fingerprint: "SHA256:c3key", newFingerprint: "SHA256:other" });
    const { mount: m, api } = await withStores({ mesh: st });
    const w = m(MeshPage);
    await flushPromises();
    const row = w.find('[data-relay="stranger"]');
    expect(row.findAll("button").map((b) => b.text())).toEqual(["Trust", "Trust new key", "Block"]);
    await row.find('[data-test="relay-trust-new-btn"]').trigger("click");
    await flushPromises();
    expect(api.mesh.trust).toHaveBeenCalledWith("c3", "SHA256:other");
    w.unmount();
  });

  it("offers each relay the buttons its state calls for", () => {
    const labels = (p: Parameters<typeof meshRelay>[0]) => relayActions(meshRelay(p)).map((a) => `${a.label}${a.disabled ? " (off)" : ""}`);
    expect(labels({ self: true, state: "trusted" })).toEqual([]);
    expect(labels({ state: "trusted" })).toEqual(["Block"]);
    expect(labels({ state: "pending", fingerprint: "" })).toEqual(["Trust (off)", "Block"]);
    expect(labels({ state: "blocked", fingerprint: "SHA256:k", newFingerprint: "SHA256:n" })).toEqual(["Trust", "Trust new key"]);
    expect(relayActions(meshRelay({ state: "trusted", newFingerprint: "SHA256:n" })).map((a) => a.fingerprint)).toEqual(["SHA256:n", null]);
  });

  it("shows why a trust failed", async () => {
    const { mount: m, api } = await withStores({ mesh: pending() });
    vi.mocked(api.mesh.trust).mockRejectedValue(new ApiError("invalid_request", "The name is shared: give the id."));
    const w = m(MeshPage);
    await flushPromises();
    await w.find('[data-relay="stranger"] [data-test="relay-trust-btn"]').trigger("click");
    await flushPromises();
    expect(w.find('[role="alert"]').text()).toContain("give the id");
    w.unmount();
  });
});

describe("MeshPage NATS credential and account mode", () => {
  it("warns when the relay's NATS credential can delete what the mesh keeps, and not when it is confined", async () => {
    const { mount: m } = await withStores({ mesh: joined({ credential: { checked: true, listed: true, can: ["delete streams", "purge streams"] } }) });
    const w = m(MeshPage);
    await flushPromises();
    const box = w.find('[data-test="mesh-credential"]');
    expect(box.text()).toContain("can delete streams, purge streams");
    expect(box.text()).toContain("mesh nats-config");
    w.unmount();
    const { mount: m2 } = await withStores({ mesh: joined({ credential: { checked: true, listed: true }, embedAuth: "relay keys" }) });
    const ok = m2(MeshPage);
    await flushPromises();
    expect(ok.find('[data-test="mesh-credential"]').exists()).toBe(false);
    expect(ok.find('[data-test="mesh-embed-open"]').exists()).toBe(false);
    ok.unmount();
  });

  it("says plainly in account mode who can speak for a relay", async () => {
    const { mount: m } = await withStores({ mesh: joined({ trust: "account" }) });
    const w = m(MeshPage);
    await flushPromises();
    const text = w.find('[data-test="mesh-trust-mode"]').text();
    expect(text).toContain("taken with a warning only");
    expect(text).toContain("its holder can speak for any relay");
    w.unmount();
    const { mount: m2 } = await withStores({ mesh: joined({ trust: "account", embedAuth: "relay keys" }) });
    const keys = m2(MeshPage);
    await flushPromises();
    expect(keys.find('[data-test="mesh-trust-mode"]').text()).toContain("each relay can write only its own entry");
    keys.unmount();
  });

  it("warns that an open embedded server lets anyone delete the stream", async () => {
    const { mount: m } = await withStores({ mesh: joined({ embedAuth: "open" }) });
    const w = m(MeshPage);
    await flushPromises();
    expect(w.find('[data-test="mesh-embed-open"]').text()).toContain("delete the stream");
    w.unmount();
  });
});

describe("MeshPage keeps its word", () => {
  const contested = () =>
    joined({
      relays: [
        meshRelay({ id: "a1", name: "laptop", self: true }),
        meshRelay({ id: "b2", name: "gpu-box" }),
        meshRelay({ id: "c3", name: "relay-a\u200b", state: "pending", previousName: "relay-c", nameIssue: "its name has an invisible character (U+200B)" }),
      ],
      names: [
        { slug: "alice", holderId: "b2", holder: "gpu-box", others: [{ name: "alice@relay-c", relayId: "c3", relay: "relay-c" }] },
        { slug: "bob", holderId: "a1", holder: "laptop", others: [{ name: "bob@gpu-box", relayId: "b2", relay: "gpu-box" }] },
      ],
      directoryConflicts: ["alice: also shown by …", "bob: also shown by …", "carol: the entries naming relay f00d were ignored"],
      keyChanges: [{ relayId: "b2", relay: "gpu-box", pinned: "SHA256:pinned", shown: "SHA256:shown" }],
      held: [
        { msgId: "m1", relayId: "b2", relay: "gpu-box", reason: "key-change", taskId: "t-k", title: "Held", sender: "alice@gpu-box", recipient: "bee", receivedAt: iso(-1000) },
        { msgId: "m2", relayId: "c3", relay: "relay-c", reason: "renamed", taskId: "t-r", title: "Held too", sender: "op@c3", recipient: "bee", receivedAt: iso(-1000) },
      ],
    });

  it("shows a name contest and gives the plain name to the relay chosen", async () => {
    const { mount: m, api } = await withStores({ mesh: contested() });
    const w = m(MeshPage);
    await flushPromises();
    const alice = w.find('[data-contest="alice"]');
    expect(alice.text()).toContain("gpu-box");
    expect(alice.text()).toContain("alice@relay-c (relay-c)");
    const give = alice.find('[data-test="give-name-btn"]');
    expect(give.attributes("aria-label")).toBe("Give the name alice to the agent of relay-c");
    await give.trigger("click");
    await flushPromises();
    expect(api.mesh.giveName).toHaveBeenCalledWith("alice", "c3");
    expect(api.mesh.status).toHaveBeenCalledTimes(2);
    // A local agent keeps its name: no button.
    expect(w.find('[data-contest="bob"]').find("button").exists()).toBe(false);
    expect(w.find('[data-contest="bob"]').text()).toContain("An agent of this relay");
    // The contest lines are in the panel; only the ignored entries stay as conflicts.
    expect(w.findAll('[data-test="mesh-dir-conflict"]').map((p) => p.text())).toEqual(["Directory conflict: carol: the entries naming relay f00d were ignored"]);
    w.unmount();
  });

  it("shows a key change with a button for each key, and why each held envelope waits", async () => {
    const { mount: m, api } = await withStores({ mesh: contested() });
    const w = m(MeshPage);
    await flushPromises();
    const k = w.find('[data-key-change="b2"]');
    expect(k.text()).toContain("SHA256:pinned");
    expect(k.text()).toContain("SHA256:shown");
    await k.find('[data-test="key-keep-btn"]').trigger("click");
    await flushPromises();
    expect(api.mesh.trust).toHaveBeenCalledWith("b2", "SHA256:pinned");
    await k.find('[data-test="key-new-btn"]').trigger("click");
    await flushPromises();
    expect(api.mesh.trust).toHaveBeenLastCalledWith("b2", "SHA256:shown");
    expect(w.find('[data-held="t-k"]').text()).toContain("another key");
    expect(w.find('[data-held="t-r"]').text()).toContain("renamed itself");
    w.unmount();
  });

  it("shows a renamed relay with both names, and why its name does not name its agents", async () => {
    const { mount: m } = await withStores({ mesh: contested() });
    const w = m(MeshPage);
    await flushPromises();
    const row = w.find('[data-relay="relay-a\u200b"]');
    expect(row.find('[data-test="relay-renamed"]').text()).toContain("Trusted as “relay-c”");
    expect(row.find('[data-test="relay-name-issue"]').text()).toContain("invisible character");
    w.unmount();
  });
});
