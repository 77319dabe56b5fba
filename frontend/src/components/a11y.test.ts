// Accessibility behaviour of the shared pieces: real tabs, dialogs and
// drawers that hold and give back the focus, the shortcuts' guards, and the
// run view's live announcements that do not flood.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { flushPromises, mount } from "@vue/test-utils";
import { nextTick } from "vue";
import SetupSnippets from "./SetupSnippets.vue";
import Modal from "./Modal.vue";
import RunView from "./RunView.vue";
import HelpOverlay from "./HelpOverlay.vue";
import NewTaskDialog from "./NewTaskDialog.vue";
import { setSingleKeys, typing, ui } from "../lib/shortcuts";
import type { RunStep } from "../stores/workers/state";
import type { ActivityEntry } from "../api";
import { withStores } from "../test/mount";
import { agent } from "../test/fakes";

afterEach(() => {
  document.body.innerHTML = "";
  vi.useRealTimers();
});

describe("SetupSnippets tabs", () => {
  const key = (el: Element, k: string) => el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));

  it("has only tabs in its tablist, one Tab stop, and arrows, Home and End that move, select and focus", async () => {
    const s = await withStores();
    const w = s.mount(SetupSnippets, { props: { mcpUrl: "http://127.0.0.1:4318/mcp" } });
    const list = w.find('[role="tablist"]');
    // aria-required-children: nothing but tabs inside the tablist (the Copy button sits beside it).
    expect(list.element.children.length).toBeGreaterThan(0);
    expect([...list.element.children].every((c) => c.getAttribute("role") === "tab")).toBe(true);
    const tabs = () => w.findAll('[role="tab"]');
    const selected = () => tabs().find((t) => t.attributes("aria-selected") === "true")!.text();
    expect(tabs().filter((t) => t.attributes("tabindex") === "0")).toHaveLength(1);
    const panel = w.find('[role="tabpanel"]');
    expect(panel.attributes("aria-labelledby")).toBe(tabs()[0].attributes("id"));
    expect(panel.attributes("tabindex")).toBe("0");

    const cases: [string, string][] = [
      ["ArrowRight", "Claude Code channel"],
      ["ArrowRight", "Codex"],
      ["End", "JSON"],
      ["ArrowRight", "Claude Code"], // wraps
      ["ArrowLeft", "JSON"], // wraps back
      ["Home", "Claude Code"],
    ];
    for (const [k, want] of cases) {
      key(document.activeElement && list.element.contains(document.activeElement) ? document.activeElement : tabs()[0].element, k);
      await nextTick();
      expect(selected(), `after ${k}`).toBe(want);
      expect(document.activeElement?.textContent?.trim(), `focus after ${k}`).toBe(want);
      expect(w.find('[role="tabpanel"]').attributes("aria-labelledby")).toBe(document.activeElement?.id);
    }
    w.unmount();
  });
});

describe("Modal focus", () => {
  it("a side drawer focuses itself, not its first action, and gives the focus back to the page heading when its opener is gone", async () => {
    document.body.innerHTML = '<main><h1>Tasks</h1></main>';
    const opener = document.createElement("button");
    document.body.appendChild(opener);
    opener.focus();
    const w = mount(Modal, {
      props: { title: "A task", side: true },
      slots: { actions: '<button id="danger">Cancel task</button>', default: "<p>Body</p>" },
      attachTo: document.body,
      global: { stubs: { teleport: true } },
    });
    await flushPromises();
    expect(document.activeElement?.getAttribute("role")).toBe("dialog");
    opener.remove(); // the card it was opened from moved to another column
    w.unmount();
    expect(document.activeElement?.tagName).toBe("H1");
    expect(document.activeElement?.getAttribute("tabindex")).toBe("-1");
  });
});

describe("Modal focus in a drawer", () => {
  const opts = { attachTo: document.body, global: { stubs: { teleport: true } } };
  it("keeps the focus in a drawer still open when a dialog opened from it closes after its opener went", async () => {
    document.body.innerHTML = "<main><h1>Tasks</h1></main>";
    const card = document.createElement("button"); // the card the drawer was opened from, behind it
    document.body.appendChild(card);
    card.focus();
    const drawer = mount(Modal, { ...opts, props: { title: "A task", side: true }, slots: { default: '<button id="cancel">Cancel task</button><button id="other">Other</button>' } });
    await flushPromises();
    const box = document.activeElement as HTMLElement;
    expect(box.getAttribute("role")).toBe("dialog");
    (document.getElementById("cancel") as HTMLElement).focus();
    const confirm = mount(Modal, { ...opts, props: { title: "Cancel the task?" }, slots: { default: "<button>Yes</button>" } });
    await flushPromises();
    document.getElementById("cancel")!.remove(); // the task was cancelled meanwhile: its button is gone
    confirm.unmount();
    expect(document.activeElement).not.toBe(card);
    expect(box.contains(document.activeElement)).toBe(true);
    // As when it opened, the drawer takes the focus itself, not one of its actions.
    expect(document.activeElement).toBe(box);
    drawer.unmount();
    expect(document.activeElement).toBe(card);
  });

  it("gives a dialog still open its first control when one opened from it closes after its opener went", async () => {
    const page = document.createElement("button");
    document.body.appendChild(page);
    page.focus();
    const outer = mount(Modal, { ...opts, props: { title: "Worker" }, slots: { default: '<input id="first" /><button id="remove">Remove worker</button>' } });
    await flushPromises();
    (document.getElementById("remove") as HTMLElement).focus();
    const inner = mount(Modal, { ...opts, props: { title: "Sure?" }, slots: { default: "<button>Yes</button>" } });
    await flushPromises();
    document.getElementById("remove")!.remove();
    inner.unmount();
    expect(document.activeElement?.id).toBe("first");
    outer.unmount();
    expect(document.activeElement).toBe(page);
  });
});

describe("Modal focus after a busy button", () => {
  it("gives a dialog opened with the focus on nothing from another the focus back to where that one was opened from", async () => {
    const opts = { attachTo: document.body, global: { stubs: { teleport: true } } };
    const card = document.createElement("button");
    document.body.appendChild(card);
    card.focus();
    const confirm = mount(Modal, { ...opts, props: { title: "Issue a new token" }, slots: { default: '<button id="replace">Replace token</button>' } });
    await flushPromises();
    (document.activeElement as HTMLElement).blur(); // its button disabled while the token is made
    const shown = mount(Modal, { ...opts, props: { title: "Token for Bob" }, slots: { default: "<p>cca_new</p>" } });
    await flushPromises();
    confirm.unmount(); // the token dialog, still open, keeps the focus
    expect(document.activeElement?.getAttribute("role")).toBe("dialog");
    shown.unmount();
    expect(document.activeElement).toBe(card);
  });
});

describe("NewTaskDialog by keyboard", () => {
  it("sends with Ctrl+Enter from the instructions field", async () => {
    const s = await withStores({ agents: [agent({ slug: "operator", kind: "human", displayName: "Operator" }), agent({ slug: "bob" })] });
    const w = s.mount(NewTaskDialog, { props: { recipient: "bob" } });
    await w.find("#nt-title").setValue("Ship it");
    const instr = w.find("#nt-instructions");
    await instr.setValue("Tag and release.");
    await instr.trigger("keydown", { key: "Enter" }); // a plain Enter is a new line, not a send
    expect(s.api.tasks.post).not.toHaveBeenCalled();
    await instr.trigger("keydown", { key: "Enter", ctrlKey: true });
    await flushPromises();
    expect(s.api.tasks.post).toHaveBeenCalledWith(expect.objectContaining({ recipientSlug: "bob", title: "Ship it", instructions: "Tag and release." }));
    expect(w.emitted("close")).toBeTruthy();
  });
});

describe("shortcuts", () => {
  beforeEach(() => {
    localStorage.clear();
    setSingleKeys(true);
  });

  it("knows which targets take typed characters", () => {
    const el = (html: string) => {
      const d = document.createElement("div");
      d.innerHTML = html;
      return d.firstElementChild;
    };
    const cases: [string, boolean][] = [
      ["<input>", true],
      ['<input type="search">', true],
      ['<input type="checkbox">', false],
      ['<input type="radio">', false],
      ["<textarea></textarea>", true],
      ["<select></select>", true],
      ["<button>Go</button>", false],
      ["<a href='#'>x</a>", false],
      ["<h1>Tasks</h1>", false],
    ];
    for (const [html, want] of cases) expect(typing(el(html)), html).toBe(want);
    expect(typing(null)).toBe(false);
  });

  it("turns the single-key shortcuts off from the help overlay, and remembers it", async () => {
    const w = mount(HelpOverlay, { attachTo: document.body, global: { stubs: { teleport: true } } });
    await flushPromises();
    expect(w.find('[data-test="shortcuts"]').text()).toContain("New task");
    const box = w.find<HTMLInputElement>('[data-test="single-keys"]');
    expect(box.element.checked).toBe(true);
    await box.setValue(false);
    expect(ui.singleKeys).toBe(false);
    expect(localStorage.getItem("crosschat.shortcuts")).toBe("off");
    expect(w.text()).toContain("(off)");
    await box.setValue(true);
    expect(ui.singleKeys).toBe(true);
    expect(localStorage.getItem("crosschat.shortcuts")).toBeNull();
    w.unmount();
  });
});

describe("RunView announcements", () => {
  const step = (seq: number, text: string, kind: ActivityEntry["kind"] = "output"): RunStep => ({
    key: `s:${seq}`,
    first: seq,
    run: 1,
    entry: { seq, at: new Date(0).toISOString(), kind, text } as ActivityEntry,
  });

  it("says the run's state politely and reads at most one step per 10 s while it runs", async () => {
    vi.useFakeTimers();
    const steps = [step(1, "started", "start")];
    const w = mount(RunView, { props: { steps, state: "running" } });
    const state = w.find('[data-test="run-state"]');
    expect(state.attributes("role")).toBe("status");
    expect(state.attributes("aria-live")).toBe("polite");
    expect(w.find(".steps").attributes("aria-live")).toBeUndefined(); // the steps themselves are not live
    const spoken = () => w.find('[data-test="run-announce"]').text();
    for (let i = 2; i <= 60; i++) {
      await w.setProps({ steps: [...steps, ...Array.from({ length: i - 1 }, (_, j) => step(j + 2, `line ${j + 2}`))] });
      vi.advanceTimersByTime(100);
    }
    // 59 steps in 5.9 s: nothing read yet, then one line when the 10 s are up.
    expect(spoken()).toBe("");
    vi.advanceTimersByTime(10_000);
    await nextTick();
    expect(spoken()).toBe("Output: line 60");
    await w.setProps({ state: "ok" });
    expect(w.find('[data-test="run-state"]').text()).toBe("Finished");
    w.unmount();
  });
});

