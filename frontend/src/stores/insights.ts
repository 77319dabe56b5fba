// The charts' data, kept current: a page's feed loads its aggregates when
// it starts and again when tasks change (relay:change), at most once every
// few seconds however busy the relay is, and once a minute so that the
// hours and days move on.
import { reactive } from "vue";
import { errorMessage, type ActivityInsights, type AgentOutcomes, type Api, type Change } from "../api";
import { throttle, tzOffsetMinutes } from "../lib/insights";

/** The least time between two reloads of a feed. */
export const INSIGHTS_THROTTLE_MS = 3000;
/** A feed reloads this often when nothing changes. */
export const INSIGHTS_REFRESH_MS = 60_000;

/** changesAggregates reports whether a change can move the charts (tasks, or a reload of everything). */
export function changesAggregates(c: Change): boolean {
  return c.type === "task" || c.type === "tasks-removed" || c.type === "resync";
}

export interface FeedOptions {
  throttleMs?: number;
  refreshMs?: number;
}

/**
 * createFeed keeps one answer of the relay current: load asks for it,
 * and start() subscribes to changes until stop(). Answers that overtake
 * each other keep the latest request's.
 */
export function createFeed<T>(api: Api, load: () => Promise<T>, opts: FeedOptions = {}) {
  const state = reactive({ data: null as T | null, error: "", loading: false });
  let seq = 0;
  let applied = 0;
  async function reload() {
    const mine = ++seq;
    state.loading = true;
    try {
      const data = await load();
      if (mine < applied) return;
      applied = mine;
      state.data = data as never;
      state.error = "";
    } catch (e) {
      if (mine >= applied) state.error = errorMessage(e);
    } finally {
      if (mine === seq) state.loading = false;
    }
  }
  const soon = throttle(() => void reload(), opts.throttleMs ?? INSIGHTS_THROTTLE_MS);
  let unsub: (() => void) | null = null;
  let timer: ReturnType<typeof setInterval> | null = null;
  return {
    state,
    reload,
    start() {
      if (unsub) return;
      unsub = api.onChange((c) => changesAggregates(c) && soon.call());
      const every = opts.refreshMs ?? INSIGHTS_REFRESH_MS;
      if (every > 0) timer = setInterval(() => soon.call(), every);
      soon.call();
    },
    stop() {
      unsub?.();
      unsub = null;
      if (timer) clearInterval(timer);
      timer = null;
      soon.cancel();
    },
  };
}

/** activityFeed is the Activity page's charts. */
export function activityFeed(api: Api, opts?: FeedOptions) {
  return createFeed<ActivityInsights>(api, () => api.insights.activity(tzOffsetMinutes()), opts);
}

/** outcomesFeed is the Agents page's sparklines. */
export function outcomesFeed(api: Api, opts?: FeedOptions) {
  return createFeed<AgentOutcomes[]>(api, () => api.insights.agents(tzOffsetMinutes()), opts);
}
