import { describe, expect, it, vi } from "vitest";
import { ref } from "vue";
import { createRelayStore } from "./relay";
import { createToasts } from "./toasts";
import { applyWorker, changedFiles, mergeSteps, runState } from "./workers/state";
import { workerLine } from "./workers/format";
import { connectPayload, defaultSlug, envNames, newConnectForm, validateConnect, validateWorker, workerFormFrom, workerPayload } from "./workers/forms";
import { T0, agent, fakeApi, harness, limits, step, worker, workerConfig } from "../test/fakes";
import type { WorkerStatus } from "../api";

describe("run steps", () => {
  it("collapses entries with the same ref into one row, the latest winning, at the place of the first", () => {
    let steps = mergeSteps([], [step(1, { kind: "start", text: "started" }), step(2, { kind: "command", text: "npm test", status: "running", ref: "c1" })]);
    steps = mergeSteps(steps, [step(3, { kind: "message", text: "Looking" })]);
    steps = mergeSteps(steps, [step(4, { kind: "command", text: "npm test", status: "ok", detail: "12 passed", ref: "c1" })]);
    expect(steps.map((s) => [s.entry.kind, s.entry.seq])).toEqual([
      ["start", 1],
      ["command", 4],
      ["message", 3],
    ]);
    expect(steps[1].entry).toMatchObject({ status: "ok", detail: "12 passed" });
  });

  it("ignores entries already seen and older versions of a ref", () => {
    let steps = mergeSteps([], [step(1), step(2, { ref: "a", status: "ok" })]);
    steps = mergeSteps(steps, [step(1), step(2, { ref: "a", status: "running" })]);
    expect(steps).toHaveLength(2);
    expect(steps[1].entry.status).toBe("ok");
  });

  it("keeps the order by seq when live entries arrive before the loaded log", () => {
    const live = mergeSteps([], [step(5, { text: "five" })]);
    const merged = mergeSteps(live, [step(1, { kind: "start" }), step(3), step(5, { text: "five" })]);
    expect(merged.map((s) => s.entry.seq)).toEqual([1, 3, 5]);
  });

  it("scopes refs to their run, so a second run's item_1 is its own row", () => {
    const steps = mergeSteps(
      [],
      [
        step(1, { kind: "start" }),
        step(2, { kind: "tool", ref: "item_1", status: "ok" }),
        step(3, { kind: "end", status: "ok" }),
        step(4, { kind: "start" }),
        step(5, { kind: "tool", ref: "item_1", status: "running" }),
      ],
    );
    expect(steps.map((s) => [s.run, s.entry.seq])).toEqual([
      [1, 1],
      [1, 2],
      [1, 3],
      [2, 4],
      [2, 5],
    ]);
    expect(runState(steps)).toBe("running");
    expect(runState(steps.slice(0, 3))).toBe("ok");
    expect(runState(mergeSteps(steps, [step(6, { kind: "end", status: "failed" })]))).toBe("failed");
    expect(runState([])).toBe("none");
  });

  it("lists changed files from files entries, the latest change of a path winning", () => {
    const steps = mergeSteps(
      [],
      [
        step(1, { kind: "files", files: [{ path: "/w/a.txt", change: "added", size: 3 }, { path: "/w/old.md", change: "changed", size: 9 }] }),
        step(2, { kind: "files", files: [{ path: "/w/a.txt", change: "changed", size: 5 }, { path: "/w/gone.png", change: "deleted" }] }),
      ],
    );
    expect(changedFiles(steps)).toEqual([
      { path: "/w/a.txt", change: "changed", size: 5 },
      { path: "/w/old.md", change: "changed", size: 9 },
      { path: "/w/gone.png", change: "deleted" },
    ]);
  });
});

describe("worker statuses", () => {
  it("applies statuses and treats an empty command as removed", () => {
    const m = new Map<string, WorkerStatus>();
    applyWorker(m, worker());
    applyWorker(m, worker({ state: "running", currentTask: { id: "t1", title: "Fix", startedAt: "" } }));
    expect(m.get("bob")?.state).toBe("running");
    applyWorker(m, worker({ state: "disabled", command: "" }));
    expect(m.has("bob")).toBe(false);
  });

  it("says what the worker does", () => {
    const at = () => "14:05";
    expect(workerLine(undefined, false, at)).toBeNull();
    expect(workerLine(worker(), false, at)?.text).toBe("Listening");
    expect(workerLine(worker(), true, at)?.text).toBe("Paused");
    expect(workerLine(worker({ state: "running", currentTask: { id: "t9", title: "Ship it", startedAt: "" } }), false, at)).toEqual({
      tone: "running",
      text: "Working on “Ship it”",
      taskId: "t9",
    });
    expect(workerLine(worker({ state: "paused" }), false, at)?.text).toBe("Paused");
    expect(workerLine(worker({ state: "disabled" }), false, at)?.text).toBe("Off");
    expect(workerLine(worker({ state: "error", error: "claude: not found" }), false, at)?.text).toBe("Error: claude: not found");
    expect(workerLine(worker({ state: "limited", resumesAt: "2026-03-01T13:05:00Z" }), false, at)?.text).toBe("Hourly limit reached, resumes at 14:05");
  });

  it("keeps workers current in the relay store: snapshot, changes, pause", async () => {
    const api = fakeApi({ workers: [worker(), worker({ agentSlug: "gone", command: "" })] });
    const store = createRelayStore(api, { now: ref(T0), toasts: createToasts({ timeoutMs: 0 }) });
    await store.start();
    expect([...store.state.workers.keys()]).toEqual(["bob"]);
    api.emit({ type: "worker", worker: worker({ agentSlug: "carol", state: "running" }) });
    expect(store.state.workers.get("carol")?.state).toBe("running");
    api.emit({ type: "worker", worker: worker({ agentSlug: "carol", state: "disabled", command: "" }) });
    expect(store.state.workers.has("carol")).toBe(false);
    api.emit({ type: "settings", settings: { maxChainDepth: 3, workersPaused: true } });
    expect(store.workersPaused.value).toBe(true);
    await store.setWorkersPaused(false);
    expect(api.workers.setPaused).toHaveBeenCalledWith(false);
    expect(store.workersPaused.value).toBe(false);
    await store.removeWorker("bob");
    expect(store.state.workers.has("bob")).toBe(false);
  });

  it("watches a task's run: loads it, merges live entries (also those during the load), stops", async () => {
    const api = fakeApi();
    let release!: (v: ReturnType<typeof step>[]) => void;
    vi.mocked(api.tasks.activity).mockImplementationOnce(() => new Promise((r) => (release = r)));
    const store = createRelayStore(api, { now: ref(T0), toasts: createToasts({ timeoutMs: 0 }) });
    await store.start();
    const feed = store.watchRun("t1");
    api.emit({ type: "activity", taskId: "t1", entries: [step(3, { kind: "command", ref: "c", status: "ok" })] });
    api.emit({ type: "activity", taskId: "other", entries: [step(9)] });
    release([step(1, { kind: "start" }), step(2, { kind: "command", ref: "c", status: "running" })]);
    await vi.waitFor(() => expect(feed.run.loading).toBe(false));
    expect(feed.run.steps.map((s) => [s.entry.seq, s.entry.status])).toEqual([
      [1, undefined],
      [3, "ok"],
    ]);
    expect(feed.state.value).toBe("running");
    api.emit({ type: "activity", taskId: "t1", entries: [step(4, { kind: "end", status: "ok" })] });
    expect(feed.state.value).toBe("ok");
    feed.stop();
    api.emit({ type: "activity", taskId: "t1", entries: [step(5)] });
    expect(feed.run.steps).toHaveLength(3);
  });
});

const L = limits();

describe("connect form", () => {
  it("defaults the slug to <harness>-<hostname>, lowercased, made unique", () => {
    expect(defaultSlug("claude-code", "Laptop.local", [])).toBe("claude-code-laptop");
    expect(defaultSlug("claude-code", "Laptop", ["claude-code-laptop", "claude-code-laptop-2"])).toBe("claude-code-laptop-3");
    expect(defaultSlug("custom", "My Mac (2)", [])).toBe("custom-my-mac-2");
  });

  it("starts with the defaults: only you, only this worker, 30 min, 20 per hour, enabled; custom gets {prompt_file} in a file", () => {
    const f = newConnectForm(harness({ id: "custom", name: "Other command-line agent", path: undefined }), "box", ["custom-box"], "operator", L);
    expect(f).toMatchObject({ slug: "custom-box-2", configureClient: false, runWorker: true });
    expect(f.worker).toMatchObject({
      command: "",
      args: "{prompt_file}",
      promptMode: "file",
      allowedSenders: ["operator"],
      exclusive: true,
      timeoutMinutes: 30,
      runsPerHour: 20,
      enabled: true,
    });
    const p = newConnectForm(harness(), "box", [], "operator", L);
    expect(p).toMatchObject({ slug: "claude-code-box", displayName: "Claude Code on box", configureClient: true });
    expect(p.worker).toMatchObject({ command: "/usr/bin/claude", promptMode: "stdin", args: "" });
  });

  it("validates before sending", () => {
    const f = newConnectForm(harness({ id: "custom", name: "Other", path: undefined }), "box", [], "operator", L);
    f.slug = "Bad Slug";
    f.displayName = " ";
    f.worker.args = "--quiet";
    f.worker.allowedSenders = [];
    f.worker.timeoutMinutes = 0;
    const e = validateConnect(f, L, ["taken"]);
    expect(Object.keys(e).sort()).toEqual(["allowedSenders", "args", "command", "displayName", "slug", "timeoutMinutes", "workdir"]);
    expect(e.args).toContain("{prompt_file}");
    f.slug = "taken";
    expect(validateConnect(f, L, ["taken"]).slug).toContain("taken");
    f.worker.command = "agent";
    f.worker.workdir = "relative/dir";
    expect(validateConnect(f, L).command).toContain("full path");
    expect(validateConnect(f, L).workdir).toContain("full path");
    f.runWorker = false;
    expect(Object.keys(validateConnect(f, L))).toEqual(["displayName"]);
    // A preset may leave the program empty: the relay uses the one it finds.
    const p = newConnectForm(harness({ path: undefined }), "box", [], "operator", L);
    p.worker.workdir = "C:\\work";
    expect(validateConnect(p, L)).toEqual({});
    expect(validateWorker({ ...p.worker, enabled: false, allowedSenders: [] }, L)).toEqual({});
  });

  it("builds the Connect payload", () => {
    const f = newConnectForm(harness({ id: "custom", name: "Other", path: undefined }), "box", [], "operator", L);
    f.displayName = " Build bot ";
    f.slug = "Build-Bot";
    f.configureClient = true; // not offered for custom programs
    f.worker.command = "/opt/agent/run.sh";
    f.worker.args = "{prompt_file}\n\n  {result_file} \n";
    f.worker.workdir = "/srv/work ";
    f.worker.extraDirs = ["/srv/a", " ", "/srv/a", "/srv/b"];
    expect(connectPayload(f)).toEqual({
      harness: "custom",
      slug: "build-bot",
      displayName: "Build bot",
      configureClient: false,
      worker: workerConfig({
        agentSlug: "build-bot",
        command: "/opt/agent/run.sh",
        args: ["{prompt_file}", "{result_file}"],
        workdir: "/srv/work",
        extraDirs: ["/srv/a", "/srv/b"],
      }),
    });
    f.runWorker = false;
    f.role = "Builds";
    expect(connectPayload(f)).toEqual({ harness: "custom", slug: "build-bot", displayName: "Build bot", configureClient: false, role: "Builds" });
  });

  it("checks against the limits the relay reports, not a copy of its own", () => {
    const tight = limits({ defaultTimeoutMinutes: 5, maxTimeoutMinutes: 10, defaultRunsPerHour: 2, maxRunsPerHour: 3, maxExtraDirs: 1, maxEnv: 2 });
    const f = newConnectForm(harness(), "box", [], "operator", tight);
    expect(f.worker).toMatchObject({ timeoutMinutes: 5, runsPerHour: 2 });
    f.worker.workdir = "/w";
    expect(validateConnect(f, tight)).toEqual({});
    f.worker.timeoutMinutes = 11;
    f.worker.runsPerHour = 4;
    f.worker.extraDirs = ["/a", "/b"];
    f.worker.env = "A B C";
    expect(validateConnect(f, tight)).toEqual({
      timeoutMinutes: "1 to 10 minutes.",
      runsPerHour: "1 to 3 runs.",
      extraDirs: "At most 1 extra folders.",
      env: "At most 2 names.",
    });
    expect(validateConnect(f, L).timeoutMinutes).toBeUndefined(); // 11 minutes is fine by the default limits
  });

  it.each([
    ["", [], undefined],
    ["OPENAI_API_KEY", ["OPENAI_API_KEY"], undefined],
    [" A_1,B\n_c ; A_1 ", ["A_1", "B", "_c"], undefined],
    ["MY-VAR 1ABC OK", ["MY-VAR", "1ABC", "OK"], "Not a variable name: MY-VAR, 1ABC."],
  ])("reads the environment names %j as %j (error %s)", (input, names, err) => {
    const f = newConnectForm(harness(), "box", [], "operator", L);
    f.worker.workdir = "/w";
    f.worker.env = input;
    expect(validateConnect(f, L).env).toBe(err);
    expect(envNames(input)).toEqual(names);
    if (!err) expect(connectPayload(f).worker?.env).toEqual(names);
  });

  it("round-trips a saved worker through the form, keeping its env", () => {
    const w = worker({ harness: "codex", args: [], promptMode: "stdin", env: ["OPENAI_API_KEY"], extraDirs: ["/x"] });
    const p = workerPayload("bob", workerFormFrom(w, L));
    expect(p).toMatchObject({ agentSlug: "bob", harness: "codex", args: [], promptMode: "stdin", env: ["OPENAI_API_KEY"], extraDirs: ["/x"] });
  });
});

void agent;
