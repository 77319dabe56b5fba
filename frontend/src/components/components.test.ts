import { afterEach, describe, expect, it, vi } from "vitest";
import { flushPromises, mount } from "@vue/test-utils";
import { ApiError } from "../api";
import TaskCard from "./TaskCard.vue";
import NewTaskDialog from "./NewTaskDialog.vue";
import AgentDialog from "./AgentDialog.vue";
import TokenRevealDialog from "./TokenRevealDialog.vue";
import Modal from "./Modal.vue";
import FormField from "./FormField.vue";
import ToggleSwitch from "./ToggleSwitch.vue";
import ConnectPage from "../pages/ConnectPage.vue";
import TaskDrawer from "./TaskDrawer.vue";
import SignIn from "../pages/SignIn.vue";
import { SESSION_ENDED } from "../lib/sessionNote";
import { agent, invite, iso, summary, task, T0 } from "../test/fakes";
import { withStores } from "../test/mount";

afterEach(() => {
  document.body.innerHTML = "";
});

describe("TaskCard", () => {
  it("shows state, priority, sender → recipient, latest update and lease time left", async () => {
    const t = summary({
      status: "claimed",
      priority: 3,
      leaseExpiresAt: iso(90_000),
      reportCount: 2,
      latestReport: { kind: "progress", message: "Half way there", createdAt: iso() },
    });
    const w = mount(TaskCard, { props: { task: t, now: T0, recipientOnline: true, operatorSlug: "operator" } });
    expect(w.text()).toContain("In progress");
    expect(w.text()).toContain("Urgent");
    expect(w.text()).toContain("Fix the build");
    expect(w.findAll(".route .slug").map((s) => s.text())).toEqual(["you", "bob"]);
    expect(w.find('[data-test="latest"]').text()).toContain("Half way there");
    const lease = w.find('[data-test="lease"]');
    expect(lease.text()).toBe("1m 30s left");
    expect(lease.classes()).toContain("warn");
    expect(w.text()).toContain("2 updates");
    await w.trigger("click");
    expect(w.emitted("open")).toEqual([["t1"]]);
  });

  it("hides normal priority, marks an expired lease and shows no lease for queued tasks", () => {
    const w = mount(TaskCard, { props: { task: summary({ status: "claimed", leaseExpiresAt: iso(-5) }), now: T0 } });
    expect(w.text()).not.toContain("Normal");
    expect(w.find('[data-test="lease"]').text()).toBe("Lease expired");
    const q = mount(TaskCard, { props: { task: summary(), now: T0 } });
    expect(q.find('[data-test="lease"]').exists()).toBe(false);
    expect(q.find('[data-test="latest"]').exists()).toBe(false);
  });

  it("gives plenty of lease no warning", () => {
    const w = mount(TaskCard, { props: { task: summary({ status: "claimed", leaseExpiresAt: iso(600_000) }), now: T0 } });
    expect(w.find('[data-test="lease"]').classes()).not.toContain("warn");
    expect(w.find('[data-test="lease"]').text()).toBe("10m 00s left");
  });
});

describe("NewTaskDialog", () => {
  const data = {
    agents: [
      agent({ slug: "operator", kind: "human", displayName: "Operator", capabilities: ["text-input"] }),
      agent({ slug: "bob", capabilities: ["code-execution", "text-input", "web-search"] }),
    ],
  };

  it("validates before sending and offers only other agents as recipients", async () => {
    const s = await withStores(data);
    const w = s.mount(NewTaskDialog);
    const options = w.findAll("#nt-recipient option").map((o) => o.attributes("value"));
    expect(options).toEqual(["", "bob"]);
    await w.find("form").trigger("submit");
    expect(w.text()).toContain("Choose who should do this.");
    expect(w.text()).toContain("Title is required.");
    expect(w.text()).toContain("Instructions is required.");
    expect(s.api.tasks.post).not.toHaveBeenCalled();
    await w.find("#nt-title").setValue("x".repeat(501));
    expect(w.text()).toContain("Title must be at most 500 characters");
  });

  it("sends recipient, title, instructions, priority and capabilities from the recipient's own", async () => {
    const s = await withStores(data);
    const w = s.mount(NewTaskDialog);
    await w.find("#nt-recipient").setValue("bob");
    const caps = w.findAll(".chips .chip");
    expect(caps.map((c) => c.text())).toEqual(["code-execution", "text-input", "web-search"]);
    await caps[2].trigger("click");
    await caps[0].trigger("click");
    await w.find("#nt-title").setValue("  Ship it  ");
    await w.find("#nt-instructions").setValue("Tag and release.");
    await w.findAll(".seg button").find((b) => b.text() === "Urgent")!.trigger("click");
    await w.find("form").trigger("submit");
    await flushPromises();
    expect(s.api.tasks.post).toHaveBeenCalledWith({
      recipientSlug: "bob",
      title: "Ship it",
      instructions: "Tag and release.",
      priority: 3,
      requiredCapabilities: ["code-execution", "web-search"],
    });
    expect(w.emitted("close")).toBeTruthy();
    expect(s.relay.state.tasks.has("new")).toBe(true);
  });

  it("shows the relay's refusal and stays open", async () => {
    const s = await withStores(data);
    vi.mocked(s.api.tasks.post).mockRejectedValueOnce(new ApiError("recipient_lacks_capability", "bob lacks web-search."));
    const w = s.mount(NewTaskDialog, { props: { recipient: "bob" } });
    await w.find("#nt-title").setValue("T");
    await w.find("#nt-instructions").setValue("I");
    await w.find("form").trigger("submit");
    await flushPromises();
    expect(w.find('[role="alert"]').text()).toBe("bob lacks web-search.");
    expect(w.emitted("close")).toBeFalsy();
  });
});

describe("AgentDialog", () => {
  it("describes the capabilities group by its error when none is chosen", async () => {
    const s = await withStores();
    const w = s.mount(AgentDialog);
    const group = () => w.get('.chips[role="group"]').element;
    expect(group().hasAttribute("aria-describedby")).toBe(false);
    for (const on of w.findAll('.chip[aria-pressed="true"]')) await on.trigger("click");
    await w.find("form").trigger("submit");
    const id = group().getAttribute("aria-describedby");
    expect(id && document.getElementById(id)?.textContent).toBe("Choose at least one capability.");
    expect(s.api.agents.create).not.toHaveBeenCalled();
    w.unmount();
  });
});

describe("TokenRevealDialog", () => {
  it("shows the token once with copy and Claude Code / Codex / JSON / instructions snippets", async () => {
    const s = await withStores();
    const reveal = {
      agent: agent({ slug: "bob", displayName: "Bob" }),
      token: "cca_abc123",
      mcpUrl: "http://127.0.0.1:4318/mcp",
      setup: {
        claudeCode: 'claude mcp add --transport http crosschat http://127.0.0.1:4318/mcp --header "Authorization: Bearer cca_abc123"',
        codex: "export CROSSCHAT_TOKEN=cca_abc123\ncodex mcp add crosschat --url http://127.0.0.1:4318/mcp --bearer-token-env-var CROSSCHAT_TOKEN",
        claudeChannel: '{"mcpServers":{"crosschat":{"command":"crosschat-relay","args":["channel"],"env":{"CROSSCHAT_TOKEN":"cca_abc123"}}}}',
        claudeChannelStart: "claude --dangerously-load-development-channels server:crosschat",
        json: { mcpServers: { crosschat: { url: "http://127.0.0.1:4318/mcp", headers: { Authorization: "Bearer cca_abc123" } } } },
        generic: "Add a server.",
      },
      instructions: "Your slug is bob.",
    };
    const w = s.mount(TokenRevealDialog, { props: { reveal } });
    expect(w.find('[data-test="token"]').text()).toBe("cca_abc123");
    expect(w.text()).toContain("Shown once");
    expect(w.find('[data-test="snippet-claude"]').text()).toContain("claude mcp add");
    const tabs = w.findAll('[role="tab"]');
    expect(tabs.map((t) => t.text())).toEqual(["Claude Code", "Claude Code channel", "Codex", "JSON", "Agent instructions"]);
    await tabs[1].trigger("click");
    expect(JSON.parse(w.find('[data-test="snippet-channel"]').text()).mcpServers.crosschat.env.CROSSCHAT_TOKEN).toBe("cca_abc123");
    expect(w.find('[data-test="snippet-channel-start"]').text()).toBe("claude --dangerously-load-development-channels server:crosschat");
    await tabs[3].trigger("click");
    expect(JSON.parse(w.find('[data-test="snippet-json"]').text()).mcpServers.crosschat.headers.Authorization).toBe("Bearer cca_abc123");
    await tabs[4].trigger("click");
    expect(w.find('[data-test="snippet-instructions"]').text()).toBe("Your slug is bob.");
    await w.findAll("button").find((b) => b.text() === "Copy token")!.trigger("click");
    expect(s.api.copy).toHaveBeenCalledWith("cca_abc123");
  });
});

describe("Connect page: invite form → message", () => {
  it("creates an invite from the form, shows the message and who joined, live", async () => {
    const s = await withStores();
    vi.mocked(s.api.invites.create).mockResolvedValueOnce({
      invite: invite({ id: "inv1", label: "Laptop", maxUses: 5 }),
      code: "cci_xyz",
      message: "# Join the Crosschat relay\nInvite code: cci_xyz",
    });
    const w = s.mount(ConnectPage);
    await w.find("#inv-label").setValue("Laptop");
    await w.find("#inv-role").setValue("Reviews PRs");
    await w.findAll("button").find((b) => b.text() === "7 days")!.trigger("click");
    await w.findAll("button").find((b) => b.text() === "5 agents")!.trigger("click");
    await w.find('input[type="checkbox"]').setValue(true);
    await w.find("#inv-task-title").setValue("Say hello");
    await w.find("#inv-task-instr").setValue("Post a greeting.");
    await w.find('[data-test="invite-form"]').trigger("submit");
    await flushPromises();
    expect(s.api.invites.create).toHaveBeenCalledWith({
      label: "Laptop",
      expiresInHours: 168,
      maxUses: 5,
      role: "Reviews PRs",
      firstTask: { title: "Say hello", instructions: "Post a greeting.", priority: 2 },
    });
    expect(w.find('[data-test="invite-message"]').text()).toContain("cci_xyz");
    expect(w.find('[data-test="invite-status"]').text()).toContain("Waiting for an agent");
    expect(w.find('[data-invite-id="inv1"]').text()).toContain("0 of 5");
    s.api.emit({ type: "agent", agent: agent({ slug: "carol", displayName: "Carol" }) });
    s.api.emit({ type: "invite", invite: invite({ id: "inv1", label: "Laptop", maxUses: 5, uses: 1, agents: ["carol"] }) });
    await flushPromises();
    expect(w.find('[data-test="invite-status"]').text()).toContain("Carol (carol)");
    expect(w.find('[data-invite-id="inv1"]').text()).toContain("1 of 5");
  });

  it("shows the Claude Code channel setup for live sessions, with <token> to fill in", async () => {
    const s = await withStores();
    const w = s.mount(ConnectPage);
    const tab = w.findAll('[role="tab"]').find((t) => t.text() === "Claude Code channel")!;
    await tab.trigger("click");
    const entry = JSON.parse(w.find('[data-test="snippet-channel"]').text()).mcpServers.crosschat;
    expect(entry).toEqual({ args: ["channel"], command: "crosschat-relay", env: { CROSSCHAT_TOKEN: "<token>", CROSSCHAT_URL: expect.any(String) } });
    expect(entry.env.CROSSCHAT_URL).not.toMatch(/\/mcp$/);
    expect(w.find('[data-test="snippet-channel-start"]').text()).toBe("claude --dangerously-load-development-channels server:crosschat");
    expect(w.text()).toContain(".mcp.json");
  });

  it("shows the command that installs the Claude Code plugin, no checkout needed", async () => {
    const s = await withStores();
    const w = s.mount(ConnectPage);
    const section = w.find('section[aria-labelledby="proj-h"]');
    expect(section.find("h2").text()).toContain("Claude Code plugin");
    expect(section.find('[data-test="plugin-install"]').text()).toBe("crosschat-relay claude-plugin");
    expect(section.text()).toContain("crosschat-relay send");
    // crosschat-relay claude-plugin runs (or prints) four claude commands:
    // marketplace add, marketplace update, install and update.
    expect(section.text()).toContain("prints the four claude plugin commands");
    expect(section.text()).toContain("from its first turn");
  });

  it("requires a title and instructions for a first task", async () => {
    const s = await withStores();
    const w = s.mount(ConnectPage);
    await w.find('input[type="checkbox"]').setValue(true);
    await w.find('[data-test="invite-form"]').trigger("submit");
    expect(w.text()).toContain("Task title is required.");
    expect(s.api.invites.create).not.toHaveBeenCalled();
  });
});

describe("FormField", () => {
  it.each([
    { name: "label only", props: {}, label: "Title", err: null, hint: null },
    { name: "note after the label", props: { note: "optional" }, label: "Title (optional)", err: null, hint: null },
    { name: "hint without an error", props: { hint: "One line" }, label: "Title", err: null, hint: "One line" },
    { name: "an untouched form's false error shows the hint", props: { error: false as const, hint: "One line" }, label: "Title", err: null, hint: "One line" },
    { name: "an error replaces the hint", props: { error: "Title is required.", hint: "One line" }, label: "Title", err: "Title is required.", hint: null },
  ])("$name", ({ props, label, err, hint }) => {
    const w = mount(FormField, { props: { id: "f-title", label: "Title", ...props }, slots: { default: '<input id="f-title" class="input" />' } });
    expect(w.find("label").attributes("for")).toBe("f-title");
    expect(w.find("label").text()).toBe(label);
    expect(w.find("label + input#f-title").exists()).toBe(true);
    expect(w.find(".err").exists() ? w.find(".err").text() : null).toBe(err);
    expect(w.find(".hint").exists() ? w.find(".hint").text() : null).toBe(hint);
  });

  it.each([
    { name: "nothing under it", props: {}, text: null },
    { name: "the hint", props: { hint: "One line" }, text: "One line" },
    { name: "the error, not the hint", props: { error: "Title is required.", hint: "One line" }, text: "Title is required." },
  ])("gives the control in its slot the id of what shows under it: $name", ({ props, text }) => {
    const w = mount(FormField, {
      props: { id: "f-title", label: "Title", ...props },
      slots: { default: '<template #default="{ describedBy }"><input id="f-title" class="input" :aria-describedby="describedBy" /></template>' },
      attachTo: document.body,
    });
    const ids = w.get("input#f-title").attributes("aria-describedby");
    expect(ids ? document.getElementById(ids)?.textContent : null).toBe(text);
    w.unmount();
  });
});

describe("ToggleSwitch", () => {
  it.each([true, false])("shows checked=%s as a named switch and asks to flip on click", async (checked) => {
    const w = mount(ToggleSwitch, { props: { checked, label: "Start at login" } });
    const b = w.get('button[role="switch"]');
    expect(b.attributes("aria-checked")).toBe(String(checked));
    expect(b.attributes("aria-label")).toBe("Start at login");
    await b.trigger("click");
    expect(w.emitted("toggle")).toEqual([[]]);
  });
});

describe("Modal", () => {
  it("closes on Escape and keeps Tab inside", async () => {
    const outside = document.createElement("button");
    document.body.appendChild(outside);
    outside.focus();
    const w = mount(Modal, {
      props: { title: "Hello" },
      slots: { default: '<input id="first" /><button id="last">Go</button>' },
      attachTo: document.body,
      global: { stubs: { teleport: true } },
    });
    await flushPromises();
    expect(document.activeElement?.id).toBe("first");
    (document.getElementById("last") as HTMLElement).focus();
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Tab", bubbles: true, cancelable: true }));
    expect(document.activeElement?.getAttribute("aria-label")).toBe("Close"); // wraps to the first focusable (the close button)
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Tab", shiftKey: true, bubbles: true, cancelable: true }));
    expect(document.activeElement?.id).toBe("last");
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(w.emitted("close")).toHaveLength(1);
    w.unmount();
    expect(document.activeElement).toBe(outside);
  });

  it("gives focus back to the button in a dialog still open under it", async () => {
    const outside = document.createElement("button");
    document.body.appendChild(outside);
    outside.focus();
    const opts = { attachTo: document.body, global: { stubs: { teleport: true } } };
    const outer = mount(Modal, { ...opts, props: { title: "Worker" }, slots: { default: '<button id="remove">Remove worker</button>' } });
    await flushPromises();
    (document.getElementById("remove") as HTMLElement).focus();
    const inner = mount(Modal, { ...opts, props: { title: "Sure?" }, slots: { default: "<button>Yes</button>" } });
    await flushPromises();
    inner.unmount();
    expect(document.activeElement?.id).toBe("remove");
    outer.unmount();
    expect(document.activeElement).toBe(outside);
  });
});

describe("TaskDrawer", () => {
  it("says a task a chat session claimed had no worker run, not that one is yet to come", async () => {
    const s = await withStores({ agents: [agent()] });
    vi.mocked(s.api.tasks.get).mockResolvedValue({ task: task({ status: "completed", claimedVia: "chat" }), related: { children: [] } });
    const w = s.mount(TaskDrawer, { props: { taskId: "t1" } });
    await flushPromises();
    expect(w.text()).toContain("No worker ran it: a chat session claimed this task.");
    expect(w.text()).not.toContain("No worker run for this task yet.");
    w.unmount();
  });

  const report = (id: string, kind: string, message: string, result?: string) => ({ id, kind, message, result, createdAt: iso(), authorSlug: "bob" });

  it("shows the hand-offs in the task's conversation and the session it is for", async () => {
    const s = await withStores({ agents: [agent()] });
    const conv = "c0ffee11-0000-4000-8000-000000000001";
    vi.mocked(s.api.tasks.get).mockResolvedValue({
      task: task({ depth: 0, hops: 2, conversationId: conv, targetSession: "review session" }),
      related: { children: [] },
    });
    const w = s.mount(TaskDrawer, { props: { taskId: "t1" } });
    await flushPromises();
    expect(w.find('[data-test="conversation"] dd').text()).toBe("2 in conversation c0ffee11");
    expect(w.find('[data-test="conversation"] .mono').attributes("title")).toBe(conv);
    expect(w.find('[data-test="target-session"] dd').text()).toBe("review session");
    vi.mocked(s.api.tasks.get).mockResolvedValue({ task: task({ id: "t2" }), related: { children: [] } });
    const w2 = s.mount(TaskDrawer, { props: { taskId: "t2" } });
    await flushPromises();
    expect(w2.find('[data-test="conversation"] dd').text()).toBe("0 · starts a conversation");
    expect(w2.find('[data-test="target-session"]').exists()).toBe(false);
  });

  it("shows a blocked task's reason with Resolve and requeue, and sends the note", async () => {
    const s = await withStores({ agents: [agent({ slug: "operator", kind: "human", displayName: "Operator" }), agent()] });
    const blocked = task({
      status: "blocked",
      claimedAt: iso(-1000),
      claimedVia: "worker",
      reports: [report("r1", "progress", "Looking."), report("r2", "blocked", "No access to DNS.")],
    });
    vi.mocked(s.api.tasks.get).mockResolvedValue({ task: blocked, related: { children: [] } });
    const w = s.mount(TaskDrawer, { props: { taskId: "t1" } });
    await flushPromises();
    expect(w.findAll(".stepper li").map((l) => [l.text(), l.classes()[0]])).toEqual([
      ["Queued", "done"],
      ["Blocked", "problem"],
      ["Done", "todo"],
    ]);
    expect(w.find(".route").text()).toContain("From You operator");
    expect(w.find(".route").text()).toContain("To Bob bob");
    expect(w.find('[data-test="blocked-callout"]').text()).toContain("No access to DNS.");
    expect(w.find('[data-test="result"]').exists()).toBe(false);
    expect(w.find(".facts").text()).toContain("by worker");
    expect(w.findAll(".timeline li").map((l) => l.find(".tl-kind").text())).toEqual(["Blocked", "Progress"]);
    expect(w.text()).toContain("Not part of a hand-off.");
    await w.find('[data-test="blocked-callout"] .btn.primary').trigger("click");
    await w.find("#note-input").setValue("Granted access.");
    await w.find("#note-form").trigger("submit");
    await flushPromises();
    expect(s.api.tasks.requeue).toHaveBeenCalledWith("t1", "Granted access.");
  });

  it("shows a completed task's result once, earlier results in the timeline, and its conversation", async () => {
    const conversation = {
      id: "p1",
      tasks: [
        { ...summary({ id: "p1", title: "The release", recipientSlug: "bob" }) },
        { ...summary({ id: "t1", title: "Fix the build", senderSlug: "bob", recipientSlug: "bob", parentTaskId: "p1", hops: 1, status: "completed" as const }) },
        { ...summary({ id: "c1", title: "Write docs", senderSlug: "bob", recipientSlug: "carol", parentTaskId: "t1", hops: 2 }) },
      ],
    };
    const s = await withStores({ agents: [agent()], conversation });
    const done = task({
      status: "completed",
      reports: [report("r1", "completed", "First try.", "v1"), report("r2", "changes", "Add tests."), report("r3", "completed", "Done.", "v2 with tests")],
    });
    vi.mocked(s.api.tasks.get).mockResolvedValue({
      task: done,
      related: { parent: summary({ id: "p1", title: "The release" }), children: [summary({ id: "c1", title: "Write docs", recipientSlug: "carol" })] },
    });
    const w = s.mount(TaskDrawer, { props: { taskId: "t1" } });
    await flushPromises();
    expect(w.find('[data-test="result"] pre').text()).toBe("v2 with tests");
    expect(w.findAll(".timeline details pre").map((p) => p.text())).toEqual(["v1"]);
    expect(w.findAll(".timeline li").map((l) => l.find(".tl-kind").text())).toEqual(["Completed", "Changes requested", "Completed"]);
    const items = w.findAll('[role="treeitem"]');
    expect(items.map((i) => i.find(".title").text())).toEqual(["The release", "Fix the build", "Write docs"]);
    expect(items[2]!.text()).toContain("bob → carol · hop 2");
    expect(items[1]!.attributes("aria-current")).toBe("true");
    await w.findAll('[data-test="result"] button').find((b) => b.text() === "Request changes")!.trigger("click");
    expect(w.find("#note-input").exists()).toBe(true);
    expect(w.text()).toContain("What to change");
  });
});

describe("SignIn", () => {
  it("says why it is back for a session that ended, and nothing on a first visit", () => {
    const back = mount(SignIn, { props: { note: SESSION_ENDED } });
    expect(back.get("[role=status]").text()).toBe(SESSION_ENDED);
    const first = mount(SignIn);
    expect(first.find("[role=status]").exists()).toBe(false);
    expect(first.text()).toContain("Sign in with the relay's admin token");
  });

  it("ties the note to the token field, so a screen reader reads it with the focused field", () => {
    const back = mount(SignIn, { props: { note: SESSION_ENDED }, attachTo: document.body });
    const input = back.get("#token");
    const ids = input.attributes("aria-describedby")?.split(" ") ?? [];
    expect(ids.map((id) => document.getElementById(id)?.textContent)).toContain(SESSION_ENDED);
    back.unmount();
    const first = mount(SignIn);
    expect(first.get("#token").attributes("aria-describedby")).toBeUndefined();
  });
});
