// Client-side checks that mirror the relay's limits (internal/relay/validate.go),
// so the dialogs explain problems before a round trip.
export const MAX_SHORT = 500;
export const MAX_LONG = 40000;
export const MAX_DETAILS = 2000;
export const MAX_LABEL = 120;
export const SLUG_RE = /^[a-z0-9][a-z0-9._:-]{1,79}$/;

export type Errors<K extends string> = Partial<Record<K, string>>;

export function text(v: string, name: string, min: number, max: number): string | undefined {
  const t = v.trim();
  if (t.length < min) return `${name} is required.`;
  if (t.length > max) return `${name} must be at most ${max.toLocaleString()} characters (now ${t.length.toLocaleString()}).`;
  return undefined;
}

export function validateNewTask(v: { recipientSlug: string; title: string; instructions: string; priority: number }) {
  const e: Errors<"recipientSlug" | "title" | "instructions" | "priority"> = {};
  if (!v.recipientSlug) e.recipientSlug = "Choose who should do this.";
  e.title = text(v.title, "Title", 1, MAX_SHORT);
  e.instructions = text(v.instructions, "Instructions", 1, MAX_LONG);
  if (![1, 2, 3].includes(v.priority)) e.priority = "Choose a priority.";
  return clean(e);
}

export function validateSlug(slug: string): string | undefined {
  const s = slug.trim().toLowerCase();
  if (!s) return "Slug is required.";
  if (!SLUG_RE.test(s)) return "2–80 characters: lowercase letters, digits, dots, underscores, colons, hyphens; start with a letter or digit.";
  return undefined;
}

export function clean<T extends Record<string, string | undefined>>(e: T): T {
  for (const k of Object.keys(e)) if (!e[k]) delete e[k];
  return e;
}
