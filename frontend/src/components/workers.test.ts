import { afterEach, describe, expect, it, vi } from "vitest";
import { flushPromises, mount } from "@vue/test-utils";
import { ApiError } from "../api";
import RunView from "./RunView.vue";
import ChangedFiles from "./ChangedFiles.vue";
import ConnectDialog from "./ConnectDialog.vue";
import LocalAgents from "./LocalAgents.vue";
import AgentCard from "./AgentCard.vue";
import WorkerDialog from "./WorkerDialog.vue";
import PathField from "./PathField.vue";
import AgentsPage from "../pages/AgentsPage.vue";
import { mergeSteps } from "../stores/workers/state";
import { WORKER_FIELDS } from "../stores/workers/forms";
import { T0, agent, harness, limits, localInfo, step, worker } from "../test/fakes";
import { withStores } from "../test/mount";

afterEach(() => {
  document.body.innerHTML = "";
  vi.unstubAllGlobals();
});

const operator = agent({ slug: "operator", kind: "human", displayName: "Operator" });

describe("RunView", () => {
  const all = mergeSteps(
    [],
    [
      step(1, { kind: "start", text: "claude code started in /w" }),
      step(2, { kind: "message", text: "I will run the tests." }),
      step(3, { kind: "thinking", text: "The failing test is flaky." }),
      step(4, { kind: "plan", text: "1. Run tests\n2. Fix" }),
      step(5, { kind: "command", text: "npm test", status: "running", ref: "c1" }),
      step(6, { kind: "tool", text: "crosschat · report_task", status: "ok", ref: "t1" }),
      step(7, { kind: "file", text: "Edit src/a.ts", status: "ok" }),
      step(8, { kind: "output", text: "compiling\ndone" }),
      step(9, { kind: "error", text: "Rate limited", status: "failed" }),
      step(10, { kind: "command", text: "npm test", status: "failed", detail: "1 failed\nexit 1", ref: "c1" }),
      step(11, { kind: "files", text: "Files: 1 changed", status: "ok", files: [{ path: "/w/src/a.ts", change: "changed", size: 10 }] }),
      step(12, { kind: "end", text: "Stopped: tests fail", status: "failed" }),
    ],
  );

  it("renders each step kind with its label, text and status, collapsed by ref", () => {
    const w = mount(RunView, { props: { steps: all, state: "failed" } });
    const rows = w.findAll("li.step");
    expect(rows.map((r) => r.attributes("data-kind"))).toEqual(["start", "message", "thinking", "plan", "command", "tool", "file", "output", "error", "files", "end"]);
    expect(rows.map((r) => r.find(".kind").text())).toEqual(["Start", "Message", "Thinking", "Plan", "Command", "Tool", "File", "Output", "Error", "Files", "End"]);
    expect(rows[0].text()).toContain("Claude code started in /w");
    const cmd = w.find('[data-kind="command"]');
    expect(cmd.attributes("data-status")).toBe("failed");
    expect(cmd.find(".st").text()).toBe("failed");
    expect(w.find('[data-kind="tool"] .st').attributes("aria-label")).toBe("ok");
    expect(w.find('[data-kind="output"] .text').text()).toBe("compiling\ndone");
    expect(w.find('[data-test="run-state"]').text()).toBe("Stopped");
    // A failed command's output is open; clicking closes it.
    expect(cmd.find("pre.detail").text()).toBe("1 failed\nexit 1");
  });

  it("shows a kind it does not know by its own name with a plain dot", () => {
    const steps = mergeSteps([], [step(1, { kind: "constructor" as never, text: "from a newer relay" })]);
    const row = mount(RunView, { props: { steps, state: "running" } }).get("li.step");
    expect(row.find(".kind").text()).toBe("constructor");
    expect(row.find(".icon").text()).toBe("·");
  });

  it("shows a run's warnings as banners above the steps", () => {
    const steps = mergeSteps(
      [],
      [
        step(1, { kind: "start", text: "Claude Code started in /w" }),
        step(2, { kind: "warning", text: "The session “release prep” (s1) was last active 3 days ago.", status: "failed" }),
        step(3, { kind: "message", text: "Done." }),
      ],
    );
    const w = mount(RunView, { props: { steps, state: "ok" } });
    const banners = w.findAll('[data-test="run-warning"]');
    expect(banners.map((b) => b.text())).toEqual(["⚠ The session “release prep” (s1) was last active 3 days ago."]);
    expect(w.find('[data-kind="warning"] .kind').text()).toBe("Warning");
  });

  it("expands and collapses a step's detail", async () => {
    const steps = mergeSteps([], [step(1, { kind: "start" }), step(2, { kind: "command", text: "ls", status: "ok", detail: "a\nb", ref: "x" })]);
    const w = mount(RunView, { props: { steps, state: "running" } });
    expect(w.find("pre.detail").exists()).toBe(false);
    await w.find("button.text").trigger("click");
    expect(w.find("pre.detail").text()).toBe("a\nb");
    expect(w.find("button.text").attributes("aria-expanded")).toBe("true");
    await w.find("button.text").trigger("click");
    expect(w.find("pre.detail").exists()).toBe(false);
    expect(w.find('[data-test="run-state"]').text()).toBe("Running");
  });

  it("says so when there is no run, in the words it is given", () => {
    const w = mount(RunView, { props: { steps: [], state: "none" } });
    expect(w.text()).toContain("No worker run for this task yet.");
    const chat = mount(RunView, { props: { steps: [], state: "none", empty: "No worker ran it: a chat session claimed this task." } });
    expect(chat.text()).toContain("No worker ran it");
    expect(chat.text()).not.toContain("yet");
  });
});

describe("ChangedFiles", () => {
  const files = [
    { path: "/w/out/made.txt", change: "added" as const, size: 38 },
    { path: "/w/pixel.png", change: "added" as const, size: 2048 },
    { path: "/w/old.png", change: "deleted" as const },
  ];

  it("lists added, changed and deleted files with sizes, previews pictures and shows them in the folder", async () => {
    vi.stubGlobal("IntersectionObserver", undefined);
    const s = await withStores();
    const w = s.mount(ChangedFiles, { props: { taskId: "t1", files } });
    await flushPromises();
    const rows = w.findAll("li.file");
    expect(rows.map((r) => [r.find(".chg").text(), r.find(".name").text()])).toEqual([
      ["Added", "made.txt"],
      ["Added", "pixel.png"],
      ["Deleted", "old.png"],
    ]);
    expect(rows[0].find(".size").text()).toBe("38 B");
    expect(rows[1].find(".size").text()).toBe("2.0 KB");
    expect(rows[2].find("button").exists()).toBe(false);
    expect(s.api.tasks.filePreview).toHaveBeenCalledTimes(1);
    expect(s.api.tasks.filePreview).toHaveBeenCalledWith("t1", "/w/pixel.png");
    expect(rows[1].find(".board img").attributes("src")).toMatch(/^data:image\/png;base64,/);
    await rows[0].find("button").trigger("click");
    expect(s.api.tasks.revealFile).toHaveBeenCalledWith("t1", "/w/out/made.txt");
  });

  it("shows why a preview or Show in folder is not available from a remote browser", async () => {
    vi.stubGlobal("IntersectionObserver", undefined);
    const s = await withStores();
    const remote = new ApiError("local_only", "This action is only available from this computer.");
    vi.mocked(s.api.tasks.filePreview).mockRejectedValueOnce(remote);
    vi.mocked(s.api.tasks.revealFile).mockRejectedValueOnce(remote);
    const w = s.mount(ChangedFiles, { props: { taskId: "t1", files } });
    await flushPromises();
    expect(w.find(".perr").text()).toBe("This action is only available from this computer.");
    await w.find("li.file button").trigger("click");
    await flushPromises();
    expect(w.find('[role="alert"]').text()).toBe("This action is only available from this computer.");
  });
});

describe("Agents on this computer", () => {
  it("shows found programs first with version and path, dims the missing, and connects with a worker", async () => {
    const s = await withStores({ agents: [operator, agent({ slug: "claude-code-laptop" })] });
    const w = s.mount(LocalAgents);
    await flushPromises();
    const cards = w.findAll("[data-harness]");
    expect(cards.map((c) => c.attributes("data-harness"))).toEqual(["claude-code", "cursor", "custom"]);
    expect(cards[0].text()).toContain("2.1.0");
    expect(cards[0].text()).toContain("/usr/bin/claude");
    expect(cards[1].classes()).toContain("missing");
    expect(cards[1].text()).toContain("not found");
    expect(cards[1].find("button").attributes("disabled")).toBeDefined();

    await cards[0].find("button").trigger("click");
    const dlg = w.findComponent(ConnectDialog);
    expect((dlg.find("#cn-slug").element as HTMLInputElement).value).toBe("claude-code-laptop-2");
    expect(dlg.text()).toContain("Add to Claude Code's own settings");
    await dlg.find('[data-test="connect-form"]').trigger("submit");
    expect(dlg.text()).toContain("Choose the folder it works in.");
    expect(s.api.workers.connect).not.toHaveBeenCalled();
    await dlg.find("#cn-workdir").setValue("/home/me/project");
    await dlg.find('[data-test="connect-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.connect).toHaveBeenCalledWith(
      expect.objectContaining({
        harness: "claude-code",
        slug: "claude-code-laptop-2",
        configureClient: true,
        worker: expect.objectContaining({ command: "/usr/bin/claude", workdir: "/home/me/project", allowedSenders: ["operator"], exclusive: true }),
      }),
    );
    const result = w.find('[data-test="connect-result"]');
    expect(result.text()).toContain("Worker started in");
    expect(result.find('[data-test="token"]').text()).toBe("cca_new");
    expect(s.relay.state.agents.has("claude-code-laptop-2")).toBe(true);
    expect(s.relay.state.workers.has("claude-code-laptop-2")).toBe(true);
  });

  it("shows the chosen program's version against the tested range in the worker form", async () => {
    for (const [h, want] of [
      [harness({ version: "2.1.400 (Claude Code)", tested: "newer", testedRange: "2.1.197–2.1.332" }), "is newer than the versions this relay was tested with (tested: 2.1.197–2.1.332); it runs anyway"],
      [harness({ version: "2.1.332 (Claude Code)", tested: "tested", testedRange: "2.1.197–2.1.332" }), "inside the tested range (tested: 2.1.197–2.1.332)"],
    ] as const) {
      const s = await withStores({ agents: [operator], local: localInfo([h]) });
      const w = s.mount(LocalAgents);
      await flushPromises();
      await w.get('[data-harness="claude-code"] button').trigger("click");
      await flushPromises();
      expect(w.findComponent(ConnectDialog).get('[data-test="harness-version"]').text()).toContain(want);
      w.unmount();
    }
  });

  it("offers no picker button in a browser, and says setup is only for this computer when remote", async () => {
    const s = await withStores();
    vi.mocked(s.api.workers.local).mockRejectedValueOnce(new ApiError("local_only", "This action is only available from this computer."));
    const w = s.mount(LocalAgents);
    await flushPromises();
    expect(w.text()).toContain("Only available from this computer");
    expect(w.find("[data-harness]").exists()).toBe(false);
  });

  it("uses the native folder picker in the window, and shows its refusal", async () => {
    const s = await withStores();
    const w = s.mount(PathField, { props: { id: "p", modelValue: "", picker: true, title: "Choose the working folder", start: "/home/me", "onUpdate:modelValue": (v: string) => w.setProps({ modelValue: v }) } });
    await w.find("button").trigger("click");
    await flushPromises();
    expect(s.api.system.pickFolder).toHaveBeenCalledWith("Choose the working folder", "/home/me");
    expect((w.find("input").element as HTMLInputElement).value).toBe("/home/me/picked");
    vi.mocked(s.api.system.pickFolder).mockRejectedValueOnce(new ApiError("invalid_request", "The folder picker needs the Crosschat Relay window; type the path instead."));
    await w.find("button").trigger("click");
    await flushPromises();
    expect(w.find(".err").text()).toContain("type the path instead");
  });

  it("describes its text field by the form's message and the picker's refusal, not its whole", async () => {
    const s = await withStores();
    const form = document.createElement("span");
    form.id = "p-form-err";
    form.textContent = "Use the folder's full path.";
    document.body.appendChild(form);
    const w = s.mount(PathField, { props: { id: "p", modelValue: "", picker: true, describedBy: "p-form-err" }, attrs: { "data-field": "workdir" } });
    const read = () => (w.get("input").attributes("aria-describedby") ?? "").split(" ").map((id) => document.getElementById(id)?.textContent);
    expect(read()).toEqual(["Use the folder's full path."]);
    expect(w.get(".pathfield").attributes("data-field")).toBe("workdir");
    expect(w.get(".pathfield").attributes("aria-describedby")).toBeUndefined();
    vi.mocked(s.api.system.pickFolder).mockRejectedValueOnce(new ApiError("invalid_request", "The folder picker needs the Crosschat Relay window; type the path instead."));
    await w.find("button").trigger("click");
    await flushPromises();
    expect(read()).toEqual(["Use the folder's full path.", "The folder picker needs the Crosschat Relay window; type the path instead."]);
    await w.setProps({ describedBy: undefined });
    expect(read()).toEqual(["The folder picker needs the Crosschat Relay window; type the path instead."]);
  });

  it("types paths in a browser: custom programs get {prompt_file} and no settings checkbox", async () => {
    const s = await withStores({ agents: [operator] });
    const w = s.mount(ConnectDialog, { props: { harness: harness({ id: "custom", name: "Other command-line agent", path: undefined }), local: localInfo(), limits: limits() } });
    // In tests there is no Wails runtime: PathField shows no "Choose…" unless asked.
    expect(w.findAll("button").some((b) => b.text() === "Choose…")).toBe(false);
    expect(w.text()).not.toContain("own settings");
    expect((w.find("#cn-args").element as HTMLTextAreaElement).value).toBe("{prompt_file}");
  });
});

describe("Agent card and worker dialog", () => {
  it("shows an agent a stream holds as online and connected, and one whose stream closed as offline", () => {
    const props = { now: T0, isOperator: false, work: { claimed: [], queued: 0 } };
    const held = mount(AgentCard, { props: { ...props, agent: agent({ lastSeenAt: "2020-01-01T00:00:00.000Z", connected: true }) } });
    expect(held.find(".presence").text()).toBe("online");
    expect(held.find(".facts").text()).toContain("connected now");
    const left = mount(AgentCard, { props: { ...props, agent: agent({ availability: "offline" }) } });
    expect(left.find(".presence").text()).toBe("offline");
    expect(left.find(".facts").text()).not.toContain("connected now");
  });

  it("shows the worker line and opens the worker form", async () => {
    const w = mount(AgentCard, {
      props: {
        agent: agent(),
        now: T0,
        isOperator: false,
        work: { claimed: [], queued: 0 },
        worker: worker({ state: "running", currentTask: { id: "t1", title: "Fix the build", startedAt: "" } }),
      },
    });
    expect(w.find('[data-test="worker-line"]').text()).toContain("Working on “Fix the build”");
    await w.findAll("button").find((b) => b.text() === "Worker settings…")!.trigger("click");
    expect(w.emitted("worker")).toHaveLength(1);
    const none = mount(AgentCard, { props: { agent: agent(), now: T0, isOperator: false, work: { claimed: [], queued: 0 } } });
    expect(none.find('[data-test="worker-line"]').exists()).toBe(false);
    expect(none.findAll("button").some((b) => b.text() === "Run automatically…")).toBe(true);
  });

  it("saves and removes a worker", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker()] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect((w.find("#wd-workdir").element as HTMLInputElement).value).toBe("/home/me/project");
    await w.find("#wd-timeout").setValue(45);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(expect.objectContaining({ agentSlug: "bob", timeoutMinutes: 45, harness: "custom" }));
    expect(w.emitted("close")).toHaveLength(1);

    const w2 = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    await w2.findAll("button").find((b) => b.text() === "Remove worker")!.trigger("click");
    await w2.findAll("button").find((b) => b.text() === "Remove worker" && b.classes().includes("solid"))!.trigger("click");
    await flushPromises();
    expect(s.api.workers.remove).toHaveBeenCalledWith("bob");
    expect(s.relay.state.workers.has("bob")).toBe(false);
  });

  it("shows a refusal that names a field at that field, focused, not in a box at the form's end", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker()] });
    vi.mocked(s.api.workers.save).mockRejectedValueOnce(new ApiError("invalid_request", "command: /nonexistent/agent is not a program on this computer."));
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    const field = w.get("#wd-command").element.closest(".field")!;
    expect(field.textContent).toContain("/nonexistent/agent is not a program on this computer.");
    expect(field.textContent).not.toContain("command:");
    expect(document.activeElement?.id).toBe("wd-command");
    expect(w.find(".error-box").exists()).toBe(false);
    expect(w.emitted("close")).toBeUndefined();
    // Any other refusal stays in the box.
    vi.mocked(s.api.workers.save).mockRejectedValueOnce(new ApiError("internal_error", "disk full"));
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(w.get(".error-box").text()).toBe("disk full");
    expect(w.get("#wd-command").element.closest(".field")!.textContent).not.toContain("is not a program");
    w.unmount();
  });

  // Where each field's refusal lands: its control (the first of a group) and the worker it is shown for.
  const claude = { harness: "claude-code", command: "/usr/bin/claude", args: [], promptMode: "stdin" as const };
  const controls: Record<(typeof WORKER_FIELDS)[number], { control: string; worker?: Parameters<typeof worker>[0] }> = {
    command: { control: "#wd-command" },
    args: { control: "#wd-args" },
    workdir: { control: "#wd-workdir" },
    extraDirs: { control: "#wd-extra-0", worker: { extraDirs: ["/srv/shared"] } },
    allowedSenders: { control: '.senders input[type="checkbox"]' },
    timeoutMinutes: { control: "#wd-timeout" },
    runsPerHour: { control: "#wd-runs" },
    env: { control: "#wd-env" },
    allowPaths: { control: "#wd-allow-paths" },
    session: { control: "#wd-session", worker: claude },
  };
  // refused mounts the worker dialog, has its save refused naming field, and returns the dialog and the control the refusal is about.
  const refused = async (field: (typeof WORKER_FIELDS)[number]) => {
    const { control, worker: p } = controls[field];
    const s = await withStores({ agents: [operator, agent()], workers: [worker(p)] });
    vi.mocked(s.api.workers.save).mockRejectedValueOnce(new ApiError("invalid_request", `${field}: “x” is refused by this relay.`));
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    return { w, el: w.get(control).element };
  };
  it.each(WORKER_FIELDS.map((f) => [f]))("focuses the control a refusal naming %s is about and shows the message there", async (field) => {
    const { w, el } = await refused(field);
    expect(document.activeElement).toBe(el);
    // The message is the error of the field (or the group of fields) the control is in.
    let at = el.closest(".field");
    while (at && !at.querySelector(":scope > .err")) at = at.parentElement!.closest(".field");
    expect(at?.querySelector(":scope > .err")?.textContent).toContain("“x” is refused by this relay.");
    expect(w.find(".error-box").exists()).toBe(false);
    w.unmount();
  });

  // What a screen reader reads with an element: the text of each element its aria-describedby names (null for a missing one).
  const described = (el: Element | null) => (el?.getAttribute("aria-describedby") ?? "").split(" ").filter(Boolean).map((id) => document.getElementById(id)?.textContent ?? null);
  it.each(WORKER_FIELDS.map((f) => [f]))("describes the control a refusal naming %s focuses, or its group, by the message", async (field) => {
    const { w, el } = await refused(field);
    expect(document.activeElement).toBe(el);
    // A group's (the senders, the extra folders) is the element data-field marks, a named group, described instead of its first control.
    const group = field === "extraDirs" || field === "allowedSenders" ? w.get(`[data-field="${field}"]`).element : null;
    if (group) {
      expect(group.getAttribute("role")).toBe("group");
      expect(document.getElementById(group.getAttribute("aria-labelledby") ?? "")?.textContent).toBeTruthy();
    }
    const texts = [...described(el), ...described(group)];
    expect(texts.some((t) => t?.includes("“x” is refused by this relay."))).toBe(true);
    expect(texts).not.toContain(null);
    w.unmount();
  });

  it("describes the time limit and runs per hour both by their one message", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker()] });
    vi.mocked(s.api.workers.save).mockRejectedValueOnce(new ApiError("invalid_request", "runsPerHour: at most 500."));
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(described(w.get("#wd-timeout").element)).toEqual(["Runs per hour: At most 500."]);
    expect(described(w.get("#wd-runs").element)).toEqual(["Runs per hour: At most 500."]);
    w.unmount();
  });

  it("describes each invalid control by its message and points aria-describedby at nothing missing", async () => {
    // Every aria-describedby in the page names elements that are there; each control or group marked invalid is described by its error.
    const check = (root: Element) => {
      for (const el of root.querySelectorAll("[aria-describedby]")) expect(described(el), `${el.id || el.className}`).not.toContain(null);
      for (const el of root.querySelectorAll('[aria-invalid="true"]')) {
        const ids = el.getAttribute("aria-describedby")?.split(" ") ?? [];
        expect(ids.some((id) => document.getElementById(id)?.matches(".err")), `${el.id} is described by an error`).toBe(true);
      }
    };
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ extraDirs: ["/srv/shared"] })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    check(document.body);
    // Errors everywhere the form checks: each invalid control is described by its own.
    await w.get("#wd-command").setValue("bin/agent");
    await w.get("#wd-args").setValue("--print");
    await w.get("#wd-workdir").setValue("");
    await w.get("#wd-extra-0").setValue("shared");
    await w.get("#wd-env").setValue("1BAD");
    await w.get("#wd-timeout").setValue(0);
    await w.get("#wd-runs").setValue(0);
    for (const box of w.findAll('.senders input[type="checkbox"]')) await box.setValue(false);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(w.findAll('[aria-invalid="true"]').map((c) => c.attributes("id"))).toEqual(["wd-command", "wd-args", "wd-workdir", "wd-env", "wd-timeout", "wd-runs"]);
    check(document.body);
    expect(described(w.get('[data-field="extraDirs"]').element)).toEqual(["Use each folder's full path."]);
    expect(described(w.get('[data-field="allowedSenders"]').element)).toEqual(["Choose whose tasks it takes, or turn the worker off."]);
    // Put right, no control is described by an error any more.
    await w.get("#wd-command").setValue("/usr/bin/agent");
    await w.get("#wd-args").setValue("{prompt_file}");
    await w.get("#wd-workdir").setValue("/w");
    await w.get("#wd-extra-0").setValue("/srv/shared");
    await w.get("#wd-env").setValue("GOOD");
    await w.get("#wd-timeout").setValue(5);
    await w.get("#wd-runs").setValue(5);
    await w.find('.senders input[type="checkbox"]').setValue(true);
    check(document.body);
    expect(document.querySelectorAll('[aria-describedby*="-err"]')).toHaveLength(0);
    w.unmount();

    // The connect dialog: its own fields (FormField) and the worker's.
    const c = s.mount(ConnectDialog, { props: { harness: harness(), local: localInfo(), limits: limits() } });
    check(document.body);
    await c.get("#cn-name").setValue("");
    await c.get("#cn-workdir").setValue("here");
    await c.find('[data-test="connect-form"]').trigger("submit");
    await flushPromises();
    expect(c.findAll('[aria-invalid="true"]').map((e) => e.attributes("id"))).toEqual(expect.arrayContaining(["cn-name", "cn-workdir"]));
    check(document.body);
    expect(described(c.get("#cn-name").element)).toEqual(["Display name is required."]);
    // A hint describes its control while there is no error.
    expect(described(c.get("#cn-slug").element)).toEqual(["Its address on the relay; cannot be changed later."]);
    c.unmount();
  });

  it("shows a refusal naming a field the form does not show in the box", async () => {
    // A preset program has no arguments field.
    const s = await withStores({ agents: [operator, agent()], workers: [worker(claude)] });
    vi.mocked(s.api.workers.save).mockRejectedValueOnce(new ApiError("invalid_request", "args: at most 64 arguments."));
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(w.find("#wd-args").exists()).toBe(false);
    expect(w.get(".error-box").text()).toBe("args: at most 64 arguments.");
    w.unmount();

    // Connecting without a worker shows no worker fields at all.
    const c = s.mount(ConnectDialog, { props: { harness: harness(), local: localInfo(), limits: limits() } });
    vi.mocked(s.api.workers.connect).mockRejectedValueOnce(new ApiError("invalid_request", "workdir: must be an absolute path."));
    await c.find(".auto .check.head input").setValue(false);
    await c.find('[data-test="connect-form"]').trigger("submit");
    await flushPromises();
    expect(c.find("#cn-workdir").exists()).toBe(false);
    expect(c.get(".error-box").text()).toBe("workdir: must be an absolute path.");
    c.unmount();
  });

  it("binds a Claude Code worker to a session picked among the folder's sessions", async () => {
    const sessions = [
      { tool: "claude-code", id: "s-new", name: "release prep", folder: "/home/me/project", lastActive: "2026-11-30T10:00:00Z", idle: true },
      { tool: "claude-code", id: "s-old", title: "Fix the parser", folder: "/home/me/project", lastActive: "2026-11-29T10:00:00Z", idle: true },
    ];
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ harness: "claude-code", command: "/usr/bin/claude", args: [], promptMode: "stdin" })], sessions });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(s.api.workers.sessions).toHaveBeenCalledWith("claude-code", "/home/me/project");
    const pick = w.find("#wd-session-pick");
    expect(pick.findAll("option").map((o) => o.text())[1]).toContain("release prep");
    await pick.setValue("s-new");
    expect((w.find("#wd-session").element as HTMLInputElement).value).toBe("s-new");
    expect(w.find('[data-test="session-idle"]').exists()).toBe(true);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(expect.objectContaining({ harness: "claude-code", session: "s-new", sessionId: "s-new" }));
  });

  it("describes the session picker by the error of listing the folder's sessions", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ harness: "claude-code", command: "/usr/bin/claude", args: [], promptMode: "stdin" })] });
    vi.mocked(s.api.workers.sessions).mockRejectedValueOnce(new ApiError("internal_error", "The sessions could not be read."));
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(described(w.get("#wd-session-pick").element)).toEqual(["The sessions could not be read."]);
    w.unmount();
  });

  it("makes a Codex worker deliver into any session a task names", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ harness: "codex", command: "/usr/bin/codex", args: [], promptMode: "stdin" })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    await w.find('[data-test="any-session"] input').setValue(true);
    expect(w.find("#wd-session-pick").exists()).toBe(false);
    expect(w.find("#wd-session").exists()).toBe(false);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(expect.objectContaining({ harness: "codex", anySession: true }));
    expect(s.api.workers.save).not.toHaveBeenCalledWith(expect.objectContaining({ session: expect.anything() }));
  });

  it("offers no session for a custom program", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker()] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(w.find('[data-test="session-field"]').exists()).toBe(false);
    expect(s.api.workers.sessions).not.toHaveBeenCalled();
  });

  it("edits the environment variable names, checked before saving", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ env: ["OPENAI_API_KEY"] })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    const env = w.find("#wd-env");
    expect((env.element as HTMLInputElement).value).toBe("OPENAI_API_KEY");
    expect(w.find('label[for="wd-env"]').text()).toContain("Environment variables");
    await env.setValue("OPENAI_API_KEY, MY-TOKEN");
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(w.text()).toContain("Not a variable name: MY-TOKEN.");
    expect(s.api.workers.save).not.toHaveBeenCalled();
    await env.setValue("OPENAI_API_KEY GH_TOKEN");
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(expect.objectContaining({ agentSlug: "bob", env: ["OPENAI_API_KEY", "GH_TOKEN"] }));
  });

  it("shows in words whether runs are sandboxed, and saves the sandbox and its allowed paths", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ harness: "custom" })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    const state = () => w.find('[data-test="sandbox-state"]').text();
    expect(w.find('label[for="wd-sandbox"]').text()).toContain("Sandbox");
    expect(w.find("#wd-sandbox").attributes("aria-describedby")).toBe("wd-sandbox-hint");
    expect(state()).toMatch(/^Not sandboxed/);
    await w.find("#wd-sandbox").setValue("on");
    expect(state()).toMatch(/^Sandboxed/);
    const paths = w.find("#wd-allow-paths");
    expect(w.find('label[for="wd-allow-paths"]').text()).toContain("Allowed paths");
    await paths.setValue("relative/dir");
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(w.text()).toContain("Use each path's full path");
    expect(s.api.workers.save).not.toHaveBeenCalled();
    await paths.setValue("/srv/data\n/home/me/.cache/tool:rw\n");
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(
      expect.objectContaining({ sandbox: "on", allowPaths: ["/srv/data", "/home/me/.cache/tool:rw"], allowUnsandboxed: false }),
    );
  });

  it("offers to allow the paths the sandbox refused the last run", async () => {
    const last = { taskId: "t1", title: "Read", outcome: "blocked", finishedAt: new Date(T0).toISOString(), summary: "refused", refused: ["/srv/data", "/home/me/.tool"] };
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ sandbox: "on", allowPaths: ["/home/me/.tool:rw"], lastRun: last })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    const box = w.find('[data-test="sandbox-refused"]');
    expect(box.text()).toContain("/srv/data");
    expect(box.text()).not.toContain("/home/me/.tool");
    await box.find('button[aria-label="Allow reading /srv/data"]').trigger("click");
    expect((w.find("#wd-allow-paths").element as HTMLTextAreaElement).value).toBe("/home/me/.tool:rw\n/srv/data");
    expect(w.find('[data-test="sandbox-refused"]').exists()).toBe(false);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(expect.objectContaining({ allowPaths: ["/home/me/.tool:rw", "/srv/data"] }));
  });

  it("lists what the last run changed that was undone, and saves the opt-in to let runs edit hooks and settings", async () => {
    const last = { taskId: "t1", title: "Plant", outcome: "completed", finishedAt: new Date(T0).toISOString(), summary: "done", undone: ["/w/.git/config (changed; put back as it was)"] };
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ sandbox: "on", lastRun: last })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(w.find('[data-test="sandbox-undone"]').text()).toContain("/w/.git/config");
    const box = w.find('[data-test="allow-hook-edits"] input');
    expect((box.element as HTMLInputElement).checked).toBe(false);
    await box.setValue(true);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.workers.save).toHaveBeenCalledWith(expect.objectContaining({ allowHookEdits: true }));
  });

  it("sandboxes Claude Code, Codex and Gemini CLI by default, and says so", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker({ harness: "codex", command: "/usr/bin/codex" })] });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(w.find('#wd-sandbox option[value=""]').text()).toContain("(on)");
    expect(w.find('[data-test="sandbox-state"]').text()).toMatch(/^Sandboxed/);
  });

  it("bounds the time limit and runs per hour by the relay's limits", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker()], limits: limits({ maxTimeoutMinutes: 90, maxRunsPerHour: 7 }) });
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(w.find("#wd-timeout").attributes("max")).toBe("90");
    expect(w.find("#wd-runs").attributes("max")).toBe("7");
    await w.find("#wd-timeout").setValue(91);
    await w.find('[data-test="worker-form"]').trigger("submit");
    await flushPromises();
    expect(w.text()).toContain("Time limit: 1 to 90 minutes.");
    expect(s.api.workers.save).not.toHaveBeenCalled();
  });
});

describe("Workers from another computer", () => {
  it("loads the dashboard without the local-only worker limits, and says where workers are set up", async () => {
    const s = await withStores({ agents: [operator, agent()], workers: [worker()], limitsError: new ApiError("local_only", "This action is only available from this computer.") });
    expect(s.relay.state.status).toBe("ready");
    expect(s.relay.state.workerLimits).toBeNull();
    const w = s.mount(WorkerDialog, { props: { agent: agent() } });
    await flushPromises();
    expect(w.find('[role="alert"]').text()).toBe("Workers can only be set up from this computer.");
    expect(w.find('[data-test="worker-form"]').exists()).toBe(false);
  });
});

describe("Agents page", () => {
  it("gives focus back to the card's token button after a new token's two dialogs, and after a revoke to its replacement", async () => {
    const s = await withStores({ agents: [operator, agent({ slug: "bob", hasToken: true })] });
    vi.mocked(s.api.agents.rotateToken).mockResolvedValue({
      agent: agent({ slug: "bob", hasToken: true }),
      token: "cca_new",
      mcpUrl: "http://127.0.0.1:4318/mcp",
      setup: { claudeCode: "", codex: "", claudeChannel: "", claudeChannelStart: "", json: {}, generic: "" },
      instructions: "",
    });
    const w = s.mount(AgentsPage);
    await flushPromises();
    const card = () => w.get('[data-agent="bob"]');
    const button = (text: string) => card().findAll("button").find((b) => b.text() === text)!;
    const escape = async () => {
      document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
      await flushPromises();
    };
    // New token → Replace token → the token, shown once → Escape.
    (button("New token").element as HTMLElement).focus();
    await button("New token").trigger("click");
    await flushPromises();
    const replace = [...document.querySelectorAll<HTMLButtonElement>("[role=dialog] button")].find((b) => b.textContent?.trim() === "Replace token")!;
    replace.click();
    await flushPromises();
    expect(document.querySelector("[role=dialog]")?.textContent).toContain("cca_new");
    await escape();
    expect(document.querySelector("[role=dialog]")).toBeNull();
    expect(document.activeElement).toBe(button("New token").element);
    // Revoke token → Revoke: the button is gone, its replacement takes focus.
    (button("Revoke token").element as HTMLElement).focus();
    await button("Revoke token").trigger("click");
    await flushPromises();
    [...document.querySelectorAll<HTMLButtonElement>("[role=dialog] button")].find((b) => b.textContent?.trim() === "Revoke")!.click();
    await flushPromises();
    expect(document.querySelector("[role=dialog]")).toBeNull();
    expect(document.activeElement).toBe(button("Issue token").element);
    w.unmount();
  });

  it("counts in its header the agents its cards show", async () => {
    const seen = new Date(T0 - 10_000).toISOString();
    const s = await withStores({
      agents: [operator, agent({ slug: "bob", lastSeenAt: seen }), agent({ slug: "carol", displayName: "Carol", lastSeenAt: "2026-01-01T00:00:00Z" })],
    });
    const w = s.mount(AgentsPage);
    await flushPromises();
    const cards = w.findAll("[data-agent]");
    const online = cards.filter((c) => c.find(".presence").text() === "online");
    expect(cards).toHaveLength(3);
    expect(w.find('[data-test="agents-count"]').text()).toBe(`${online.length} of ${cards.length} online`);
  });
});
