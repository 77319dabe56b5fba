import { reactive } from "vue";

export const PAGES = ["tasks", "agents", "connect", "activity", "mesh", "settings"] as const;
export type Page = (typeof PAGES)[number];

export interface Route {
  page: Page;
  query: Record<string, string>;
}

/** parseHash reads "#/agents?task=abc" into a route; unknown pages fall back to tasks. */
export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, "");
  const [path, qs = ""] = raw.split("?", 2);
  const name = path.replace(/\/+$/, "") as Page;
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(qs)) query[k] = v;
  return { page: (PAGES as readonly string[]).includes(name) ? name : "tasks", query };
}

export function formatHash(r: Route): string {
  const qs = new URLSearchParams(r.query).toString();
  return `#/${r.page}${qs ? `?${qs}` : ""}`;
}

export const route = reactive<Route>(parseHash(typeof location !== "undefined" ? location.hash : ""));

function sync() {
  const r = parseHash(location.hash);
  route.page = r.page;
  route.query = r.query;
}

if (typeof window !== "undefined") window.addEventListener("hashchange", sync);

/** navigate changes the hash; the route follows through hashchange (and at once here). */
export function navigate(page: Page, query: Record<string, string> = {}) {
  const h = formatHash({ page, query });
  if (location.hash !== h) location.hash = h;
  sync();
}

/** openTask opens the task drawer over the current page. */
export function openTask(id: string) {
  navigate(route.page, { ...route.query, task: id });
}

export function closeTask() {
  const q = { ...route.query };
  delete q.task;
  navigate(route.page, q);
}
