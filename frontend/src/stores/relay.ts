// The relay store: a snapshot of the relay kept current by relay:change
// events (from Go in the window, SSE over the bridge in a browser).
import { computed, reactive, ref, type Ref } from "vue";
import type {
  ActivityEntry,
  Agent,
  Api,
  Change,
  ConnectInput,
  CreateAgentInput,
  Info,
  Invite,
  InviteInput,
  NewTask,
  ProfileUpdate,
  RelayEvent,
  Settings,
  Stats,
  Task,
  TaskSummary,
  WorkerConfig,
  WorkerLimits,
  WorkerStatus,
} from "../api";
import { errorMessage } from "../api";
import { ms } from "../lib/time";
import { attentionReason, byNewest, byUrgency, isOnline, summarize, type AttentionReason } from "./derive";
import type { Toasts } from "./toasts";
import { applyWorker, mergeSteps, runState, type RunStep } from "./workers/state";

/** Sizes of the snapshot, as the upstream dashboard loads it. */
export const OPEN_LIMIT = 500;
export const DONE_LIMIT = 100;
export const EVENTS_PAGE = 50;
export const EVENTS_KEPT = 500;
const STATS_DEBOUNCE_MS = 300;

export type LoadStatus = "idle" | "loading" | "ready" | "error";

export interface RelayStoreOptions {
  now?: Ref<number>;
  toasts?: Toasts;
}

export function createRelayStore(api: Api, opts: RelayStoreOptions = {}) {
  const now = opts.now ?? ref(Date.now());
  const state = reactive({
    status: "idle" as LoadStatus,
    error: "",
    connected: true,
    info: null as Info | null,
    stats: null as Stats | null,
    settings: null as Settings | null,
    tasks: new Map<string, TaskSummary>(),
    agents: new Map<string, Agent>(),
    invites: new Map<string, Invite>(),
    events: [] as RelayEvent[],
    eventsAgent: "",
    eventsLoading: false,
    eventsExhausted: false,
    eventsError: "",
    workers: new Map<string, WorkerStatus>(),
    /** False when the relay could not list workers (it runs none). */
    workersAvailable: false,
    /** The relay's bounds for worker settings (Workers.Limits), for the forms; null where workers cannot be set up (not this computer). */
    workerLimits: null as WorkerLimits | null,
  });

  // Changes that arrive while a snapshot loads are applied after it.
  let buffered: Change[] | null = null;
  let statsTimer: ReturnType<typeof setTimeout> | null = null;
  let generation = 0;
  let statsSeq = 0;
  let statsApplied = 0;

  const operatorSlug = computed(() => state.info?.operatorSlug ?? "");

  /** upsertTask keeps the newer of two versions; it returns whether t was taken and what it replaced. */
  function upsertTask(t: TaskSummary): { taken: boolean; prev?: TaskSummary } {
    const prev = state.tasks.get(t.id);
    if (prev && ms(prev.updatedAt) > ms(t.updatedAt)) return { taken: false, prev }; // stale
    const was = prev ? { ...prev } : undefined;
    state.tasks.set(t.id, t);
    return { taken: true, prev: was };
  }

  function refreshStatsSoon() {
    if (statsTimer) clearTimeout(statsTimer);
    statsTimer = setTimeout(async () => {
      statsTimer = null;
      const seq = ++statsSeq;
      try {
        const s = await api.overview.stats();
        // Answers can overtake each other: keep only the latest request's.
        if (seq > statsApplied) {
          statsApplied = seq;
          state.stats = s;
        }
      } catch {
        /* keep the last counts; the next change retries */
      }
    }, STATS_DEBOUNCE_MS);
  }

  function alertFor(t: TaskSummary, prev: TaskSummary | undefined) {
    if (!opts.toasts || !operatorSlug.value || t.senderSlug !== operatorSlug.value) return;
    if (prev?.status === t.status) return;
    if (t.status === "completed") {
      opts.toasts.push({ kind: "success", title: `Done: ${t.title}`, body: `${t.recipientSlug} completed your task.`, taskId: t.id });
    } else if (t.status === "blocked") {
      opts.toasts.push({
        kind: "warning",
        title: `Blocked: ${t.title}`,
        body: t.latestReport?.message || `${t.recipientSlug} is blocked.`,
        taskId: t.id,
      });
    }
  }

  function applyNow(c: Change) {
    switch (c.type) {
      case "task":
        if (c.task) {
          const { taken, prev } = upsertTask(c.task);
          if (taken) alertFor(c.task, prev);
          refreshStatsSoon();
        }
        break;
      case "tasks-removed":
        for (const id of c.ids ?? []) state.tasks.delete(id);
        refreshStatsSoon();
        break;
      case "agent":
        // A retired agent leaves the lists, as on a fresh load.
        if (c.agent?.retiredAt) state.agents.delete(c.agent.slug);
        else if (c.agent) state.agents.set(c.agent.slug, c.agent);
        break;
      case "agent-removed":
        if (c.slug) state.agents.delete(c.slug);
        break;
      case "event":
        if (c.event && (!state.eventsAgent || c.event.recipientSlug === state.eventsAgent)) {
          if (!state.events.some((e) => e.sequence === c.event!.sequence)) {
            state.events.unshift(c.event);
            if (state.events.length > EVENTS_KEPT) state.events.length = EVENTS_KEPT;
          }
        }
        break;
      case "invite":
        if (c.invite) state.invites.set(c.invite.id, c.invite);
        break;
      case "settings":
        if (c.settings) state.settings = c.settings;
        break;
      case "worker":
        if (c.worker) applyWorker(state.workers, c.worker);
        break;
      case "activity":
        if (c.taskId && c.entries?.length) for (const w of runWatchers.get(c.taskId) ?? []) w.push(c.entries);
        break;
      case "resync":
        void load();
        break;
    }
  }

  /** apply takes one change from the relay. */
  function apply(c: Change) {
    if (!c || typeof c !== "object") return;
    if (buffered && c.type !== "resync") buffered.push(c);
    else applyNow(c);
  }

  /** load replaces everything with a fresh snapshot. */
  async function load() {
    const gen = ++generation;
    if (state.status !== "ready") state.status = "loading";
    buffered = [];
    try {
      const [info, stats, agents, open, done, events, invites, settings, workers, workerLimits] = await Promise.all([
        api.overview.info(),
        api.overview.stats(),
        api.agents.list(),
        api.tasks.list({ statuses: ["queued", "claimed", "blocked"], limit: OPEN_LIMIT }),
        api.tasks.list({ statuses: ["completed", "cancelled"], limit: DONE_LIMIT }),
        api.events.list({ agent: state.eventsAgent || undefined, limit: EVENTS_PAGE }),
        api.invites.list(),
        api.settings.get(),
        api.workers.list().catch(() => null),
        api.workers.limits().catch(() => null),
      ]);
      if (gen !== generation) return;
      state.info = info;
      statsApplied = ++statsSeq;
      state.stats = stats;
      state.settings = settings;
      state.agents = new Map((agents ?? []).map((a) => [a.slug, a]));
      state.tasks = new Map([...(done ?? []), ...(open ?? [])].map((t) => [t.id, t]));
      state.invites = new Map((invites ?? []).map((i) => [i.id, i]));
      state.events = events ?? [];
      state.eventsExhausted = (events?.length ?? 0) < EVENTS_PAGE;
      const ws = new Map<string, WorkerStatus>();
      for (const w of workers?.workers ?? []) applyWorker(ws, w);
      state.workers = ws;
      state.workersAvailable = !!workers;
      state.workerLimits = workerLimits;
      state.error = "";
      const pending = buffered ?? [];
      buffered = null;
      for (const c of pending) applyNow(c);
      state.status = "ready";
      // Run steps sent while the stream was down are only in the log.
      for (const ws of runWatchers.values()) for (const w of ws) w.reload();
    } catch (e) {
      if (gen !== generation) return;
      buffered = null;
      state.error = errorMessage(e);
      if (state.status !== "ready") state.status = "error";
      else opts.toasts?.push({ kind: "error", title: "Could not reload", body: state.error });
    }
  }

  let unsubs: (() => void)[] = [];
  /** start subscribes to changes, then loads the snapshot. */
  function start() {
    stop();
    unsubs = [api.onChange(apply), api.onConnection((on) => (state.connected = on))];
    return load();
  }
  function stop() {
    for (const u of unsubs) u();
    unsubs = [];
    if (statsTimer) clearTimeout(statsTimer);
    statsTimer = null;
  }

  // --- derived --------------------------------------------------------------

  const taskList = computed(() => [...state.tasks.values()]);
  const attention = computed(() => {
    const out: { task: TaskSummary; reason: AttentionReason }[] = [];
    for (const t of taskList.value) {
      const reason = attentionReason(t, state.agents, now.value);
      if (reason) out.push({ task: t, reason });
    }
    return out.sort((a, b) => byUrgency(a.task, b.task));
  });
  const agentList = computed(() =>
    [...state.agents.values()].sort((a, b) => {
      // The operator first, then online agents, then by name.
      const op = (x: Agent) => (x.slug === operatorSlug.value ? 0 : 1);
      const on = (x: Agent) => (isOnline(x, now.value) ? 0 : 1);
      return op(a) - op(b) || on(a) - on(b) || a.displayName.localeCompare(b.displayName) || a.slug.localeCompare(b.slug);
    }),
  );
  const inviteList = computed(() => [...state.invites.values()].sort((a, b) => ms(b.createdAt) - ms(a.createdAt)));
  /** counts of open tasks: exact from the snapshot unless it hit its limit, else the relay's. */
  const counts = computed(() => {
    const c = { queued: 0, claimed: 0, blocked: 0 };
    for (const t of taskList.value) if (t.status in c) c[t.status as keyof typeof c]++;
    const st = state.stats?.tasks;
    if (st && c.queued + c.claimed + c.blocked >= OPEN_LIMIT) return { queued: st.queued, claimed: st.claimed, blocked: st.blocked };
    return c;
  });
  const onlineCount = computed(() => agentList.value.filter((a) => isOnline(a, now.value)).length);

  function workOf(slug: string) {
    const claimed = taskList.value.filter((t) => t.recipientSlug === slug && t.status === "claimed").sort(byNewest);
    const queued = taskList.value.filter((t) => t.recipientSlug === slug && t.status === "queued").length;
    return { claimed, queued };
  }

  // --- worker runs ----------------------------------------------------------

  interface RunWatcher {
    push(entries: ActivityEntry[]): void;
    reload(): void;
  }
  const runWatchers = new Map<string, Set<RunWatcher>>();

  /**
   * watchRun loads a task's run steps and keeps them current from activity
   * changes (entries arriving during the load are merged after it).
   */
  function watchRun(taskId: string) {
    const run = reactive({ steps: [] as RunStep[], loading: true, error: "" });
    let pending: ActivityEntry[] | null = null;
    let seq = 0;
    async function reload() {
      const mine = ++seq;
      pending = pending ?? [];
      try {
        const list = await api.tasks.activity(taskId);
        if (mine !== seq) return;
        run.steps = mergeSteps(mergeSteps([], list), pending);
        run.error = "";
      } catch (e) {
        if (mine !== seq) return;
        run.steps = mergeSteps(run.steps, pending);
        run.error = errorMessage(e);
      } finally {
        if (mine === seq) {
          pending = null;
          run.loading = false;
        }
      }
    }
    const w: RunWatcher = {
      push(entries) {
        if (pending) pending.push(...entries);
        else run.steps = mergeSteps(run.steps, entries);
      },
      reload: () => void reload(),
    };
    const set = runWatchers.get(taskId) ?? new Set<RunWatcher>();
    set.add(w);
    runWatchers.set(taskId, set);
    void reload();
    return {
      run,
      state: computed(() => runState(run.steps)),
      stop() {
        set.delete(w);
        if (!set.size) runWatchers.delete(taskId);
      },
    };
  }

  const workersPaused = computed(() => !!state.settings?.workersPaused);

  // --- events paging --------------------------------------------------------

  async function setEventsAgent(slug: string) {
    state.eventsAgent = slug;
    state.eventsLoading = true;
    state.eventsError = "";
    try {
      const list = await api.events.list({ agent: slug || undefined, limit: EVENTS_PAGE });
      if (state.eventsAgent !== slug) return;
      state.events = list ?? [];
      state.eventsExhausted = (list?.length ?? 0) < EVENTS_PAGE;
    } catch (e) {
      state.eventsError = errorMessage(e);
    } finally {
      state.eventsLoading = false;
    }
  }

  async function loadOlderEvents() {
    const last = state.events[state.events.length - 1];
    if (!last || state.eventsLoading || state.eventsExhausted) return;
    state.eventsLoading = true;
    state.eventsError = "";
    const agent = state.eventsAgent;
    try {
      const list = await api.events.list({ agent: agent || undefined, before: last.sequence, limit: EVENTS_PAGE });
      if (state.eventsAgent !== agent) return;
      const seen = new Set(state.events.map((e) => e.sequence));
      state.events.push(...(list ?? []).filter((e) => !seen.has(e.sequence)));
      state.eventsExhausted = (list?.length ?? 0) < EVENTS_PAGE;
    } catch (e) {
      state.eventsError = errorMessage(e);
    } finally {
      state.eventsLoading = false;
    }
  }

  // --- actions: each applies its answer at once; the change event follows ---

  function took(t: Task): Task {
    upsertTask(summarize(t));
    refreshStatsSoon();
    return t;
  }

  // kept and keptAgent keep the agent an answer carries and return the answer.
  function kept(a: Agent): Agent {
    state.agents.set(a.slug, a);
    return a;
  }
  function keptAgent<R extends { agent: Agent }>(r: R): R {
    kept(r.agent);
    return r;
  }

  const actions = {
    postTask: async (t: NewTask) => took(await api.tasks.post(t)),
    cancelTask: async (id: string, reason: string) => took(await api.tasks.cancel(id, reason)),
    requeueTask: async (id: string, note: string) => took(await api.tasks.requeue(id, note)),
    requestChanges: async (id: string, note: string) => took(await api.tasks.requestChanges(id, note)),
    createAgent: async (a: CreateAgentInput) => keptAgent(await api.agents.create(a)),
    updateAgent: async (slug: string, p: ProfileUpdate) => kept(await api.agents.update(slug, p)),
    rotateToken: async (slug: string) => keptAgent(await api.agents.rotateToken(slug)),
    revokeToken: async (slug: string) => kept(await api.agents.revokeToken(slug)),
    deleteAgent: async (slug: string) => {
      await api.agents.remove(slug);
      state.agents.delete(slug);
    },
    createInvite: async (i: InviteInput) => {
      const r = await api.invites.create(i);
      state.invites.set(r.invite.id, r.invite);
      return r;
    },
    revokeInvite: async (id: string) => {
      const inv = await api.invites.revoke(id);
      state.invites.set(inv.id, inv);
      return inv;
    },
    updateSettings: async (s: Settings) => {
      state.settings = await api.settings.update(s);
      return state.settings;
    },
    setWorkersPaused: async (paused: boolean) => {
      const p = await api.workers.setPaused(paused);
      if (state.settings) state.settings = { ...state.settings, workersPaused: p };
      return p;
    },
    saveWorker: async (c: WorkerConfig) => {
      const w = await api.workers.save(c);
      applyWorker(state.workers, w);
      return w;
    },
    removeWorker: async (slug: string) => {
      await api.workers.remove(slug);
      state.workers.delete(slug);
    },
    connectLocal: async (i: ConnectInput) => {
      const r = await api.workers.connect(i);
      kept(r.agent);
      if (r.worker) applyWorker(state.workers, r.worker);
      return r;
    },
  };

  return {
    state,
    now,
    operatorSlug,
    taskList,
    attention,
    agentList,
    inviteList,
    counts,
    onlineCount,
    workOf,
    workersPaused,
    watchRun,
    apply,
    load,
    start,
    stop,
    setEventsAgent,
    loadOlderEvents,
    ...actions,
  };
}

export type RelayStore = ReturnType<typeof createRelayStore>;
