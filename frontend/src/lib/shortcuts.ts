// Keyboard shortcuts of the dashboard. Single-character shortcuts (?, n, /,
// g then a letter) can be turned off on the help overlay (WCAG 2.1.4), and
// they never fire while the focus is in a text field or a dialog is open.
import { reactive } from "vue";
import type { Page } from "./route";

const OFF_KEY = "crosschat.shortcuts";

/** The keys "g" then one of these go to a page. */
export const GO_KEYS: Record<string, Page> = { t: "tasks", a: "agents", c: "connect", y: "activity", m: "mesh", s: "settings" };

/** The shortcuts, as the help overlay lists them. */
export const SHORTCUTS: { keys: string[]; what: string; single?: boolean }[] = [
  { keys: ["?"], what: "Show these shortcuts", single: true },
  { keys: ["n"], what: "New task", single: true },
  { keys: ["/"], what: "Search tasks (on Tasks)", single: true },
  { keys: ["g", "t"], what: "Go to Tasks", single: true },
  { keys: ["g", "a"], what: "Go to Agents", single: true },
  { keys: ["g", "c"], what: "Go to Connect", single: true },
  { keys: ["g", "y"], what: "Go to Activity", single: true },
  { keys: ["g", "m"], what: "Go to Mesh", single: true },
  { keys: ["g", "s"], what: "Go to Settings", single: true },
  { keys: ["Tab"], what: "Next control; Shift+Tab goes back" },
  { keys: ["Enter"], what: "Open the focused card or press the focused button" },
  { keys: ["←", "→"], what: "Move between tabs (Home and End: first and last)" },
  { keys: ["Ctrl", "Enter"], what: "Send the New task form from any field" },
  { keys: ["Esc"], what: "Close the dialog or drawer; focus goes back where it was" },
];

/** ui is the app-wide state the shortcuts drive. */
export const ui = reactive({
  /** The help overlay is open. */
  help: false,
  /** A New task dialog was asked for (the Tasks page opens it and clears this). */
  newTask: false,
  /** Focus the Tasks search (the Tasks page does it and clears this). */
  search: false,
  /** Single-character shortcuts are on. */
  singleKeys: readSingleKeys(),
});

function readSingleKeys(): boolean {
  try {
    return localStorage.getItem(OFF_KEY) !== "off";
  } catch {
    return true;
  }
}

/** setSingleKeys turns the single-character shortcuts on or off, remembered in this browser. */
export function setSingleKeys(on: boolean) {
  ui.singleKeys = on;
  try {
    if (on) localStorage.removeItem(OFF_KEY);
    else localStorage.setItem(OFF_KEY, "off");
  } catch {
    /* private mode: on for this tab only */
  }
}

/** typing reports whether a key typed at el belongs to it (text fields, selects, editable content). */
export function typing(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  if (el.isContentEditable) return true;
  const tag = el.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag !== "INPUT") return false;
  const type = (el as HTMLInputElement).type;
  return !["checkbox", "radio", "button", "submit", "reset", "range", "color", "file"].includes(type);
}
