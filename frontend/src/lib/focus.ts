const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** takesFocus tells a control Tab reaches: a focusable element, not inert, not taken out of the tab order. */
function takesFocus(el: HTMLElement): boolean {
  return el.matches(FOCUSABLE) && !el.hasAttribute("inert") && el.tabIndex >= 0;
}

export function focusables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(takesFocus);
}

/** firstControl is el when it takes the focus itself, else its first control inside; none when neither. */
export function firstControl(el: HTMLElement): HTMLElement | undefined {
  return takesFocus(el) ? el : focusables(el)[0];
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
/** openLayer is the innermost open dialog still in the page, if any. */
function openLayer(): HTMLElement | undefined {
  return [...stack].reverse().find((el) => document.contains(el));
}

// The element each open dialog was opened from, by the dialog's box: a
// dialog opened from inside another (a confirmation's result) can go back
// to where the first one was opened from when its own opener is gone.
const openers = new WeakMap<HTMLElement, HTMLElement | null>();

/** Return is where focus goes back to when a dialog closes. */
export interface Return {
  /** opener had the focus when the dialog opened. */
  opener: HTMLElement | null;
  /** outer opened the dialogs opener is in (itself when in none): for when opener is gone. */
  outer: HTMLElement | null;
  /** home is the [data-focus-return] container of outer, for when it is gone too. */
  home: HTMLElement | null;
  /** key is outer's data-focus-key: its replacement in home has the same. */
  key: string;
}

/**
 * returnFor is where a dialog opened now (focus on active) returns focus to.
 * One opened with the focus on nothing while a dialog is open (its button
 * disabled while busy: a token shown after its confirmation) counts as
 * opened from that dialog.
 */
export function returnFor(active: Element | null): Return {
  const opener = active instanceof HTMLElement ? active : null;
  let outer: HTMLElement | null = opener && opener !== document.body ? opener : (openLayer() ?? opener);
  for (let i = stack.length - 1; i >= 0; i--) {
    if (outer && stack[i].contains(outer)) outer = openers.get(stack[i]) ?? null;
  }
  return { opener, outer, home: outer?.closest<HTMLElement>("[data-focus-return]") ?? null, key: outer?.dataset.focusKey ?? "" };
}

/** rememberReturn records box's opener, for dialogs opened from inside it. */
export function rememberReturn(box: HTMLElement, r: Return) {
  openers.set(box, r.opener);
}

/**
 * entry is where the focus goes in a dialog box: its [autofocus] control,
 * else its first control but the close button, else the box itself. A side
 * drawer (data-focus-self) takes it itself, so a screen reader reads its
 * title first and Enter does not land on one of its actions.
 */
export function entry(box: HTMLElement): HTMLElement {
  const auto = box.querySelector<HTMLElement>("[autofocus], [data-autofocus]");
  const first = box.hasAttribute("data-focus-self") ? undefined : focusables(box).find((el) => !el.classList.contains("x"));
  return auto ?? first ?? box;
}

/**
 * returnFocus gives focus back: to the opener if it is still there (a
 * dialog still open under this one included), else to where the dialogs
 * it was in were opened from, else to that one's replacement in its home
 * (the same data-focus-key: "Issue token" for a revoked token's "Revoke
 * token"), else to home's first control. While a dialog stays open under
 * this one (a drawer), the focus stays in it: none of these behind it
 * counts, and with none in it, its entry takes the focus. False when none
 * is left.
 */
export function returnFocus(r: Return): boolean {
  const top = openLayer();
  const usable = (el: HTMLElement | null): el is HTMLElement => !!el && el !== document.body && document.contains(el) && (!top || top.contains(el));
  for (const el of [r.opener, r.outer]) {
    if (usable(el)) {
      el.focus();
      return true;
    }
  }
  const home = usable(r.home) ? (r.key && r.home.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(r.key)}"]`)) || focusables(r.home)[0] : undefined;
  const el = home || (top && entry(top));
  if (!el) return false;
  el.focus();
  return true;
}
