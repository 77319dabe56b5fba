const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export function focusables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => !el.hasAttribute("inert") && el.tabIndex >= 0);
}

/** trapTab keeps Tab and Shift+Tab inside root. */
export function trapTab(e: KeyboardEvent, root: HTMLElement) {
  if (e.key !== "Tab") return;
  const els = focusables(root);
  if (!els.length) {
    e.preventDefault();
    root.focus();
    return;
  }
  const first = els[0];
  const last = els[els.length - 1];
  const active = document.activeElement as HTMLElement | null;
  const inside = active ? root.contains(active) : false;
  if (e.shiftKey && (active === first || !inside)) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (active === last || !inside)) {
    e.preventDefault();
    first.focus();
  }
}

// Open dialogs, innermost last: Escape and Tab belong to the top one only.
const stack: HTMLElement[] = [];
export function pushLayer(el: HTMLElement) {
  stack.push(el);
}
export function popLayer(el: HTMLElement) {
  const i = stack.lastIndexOf(el);
  if (i >= 0) stack.splice(i, 1);
}
export function isTopLayer(el: HTMLElement) {
  return stack[stack.length - 1] === el;
}
