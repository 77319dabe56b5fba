// src/api is the only place in the frontend that imports the generated Wails
// bindings (wailsjs/go/* and wailsjs/runtime). Components and stores use the
// typed `Api` below, so the browser bridge shim and the native window share
// one seam, and a changed Go signature breaks `vue-tsc`.
import * as AgentsB from "../../wailsjs/go/app/Agents";
import * as EventsB from "../../wailsjs/go/app/Events";
import * as InsightsB from "../../wailsjs/go/app/Insights";
import * as InvitesB from "../../wailsjs/go/app/Invites";
import * as MeshB from "../../wailsjs/go/app/Mesh";
import * as OverviewB from "../../wailsjs/go/app/Overview";
import * as SettingsB from "../../wailsjs/go/app/Settings";
import * as SystemB from "../../wailsjs/go/app/System";
import * as TasksB from "../../wailsjs/go/app/Tasks";
import * as WorkersB from "../../wailsjs/go/app/Workers";
import type { app, mesh, relay } from "../../wailsjs/go/models";
import * as rt from "../../wailsjs/runtime/runtime";
import { CHANGE_EVENT, CONNECTION_EVENT, createBridge, createSessionClient, type SessionState } from "./bridge";
import { toApiError } from "./errors";

export { ApiError, errorMessage, toApiError, ErrLocalOnly, ErrNetwork, ErrUnauthorized } from "./errors";
export type { SessionState } from "./bridge";

/** Data strips the generated classes' helper methods: the plain JSON shape. */
export type Data<T> = T extends (infer U)[]
  ? Data<U>[]
  : T extends object
    ? { [K in keyof T as T[K] extends (...a: any[]) => any ? never : K]: Data<T[K]> }
    : T;

export type TaskStatus = "queued" | "claimed" | "blocked" | "completed" | "cancelled";
export type TaskSummary = Data<relay.TaskSummary> & { status: TaskStatus };
export type Task = Data<relay.Task> & { status: TaskStatus };
export type Report = Data<relay.Report>;
export type TaskDetail = { task: Task; related: { parent?: TaskSummary; children: TaskSummary[] } };
export type TaskFilter = Data<relay.TaskFilter>;
export type NewTask = Data<app.NewTask>;
export type Agent = Data<relay.Agent>;
export type CreateAgentInput = Data<relay.CreateAgentInput>;
export type ProfileUpdate = Data<relay.ProfileUpdate>;
export type TokenReveal = Data<app.TokenReveal>;
export type Invite = Data<relay.Invite>;
export type InviteInput = Data<relay.InviteInput>;
export type InviteCreated = Data<app.InviteCreated>;
export type RelayEvent = Data<relay.Event>;
export type EventFilter = Data<relay.EventFilter>;
export type Info = Data<app.Info>;
export type Stats = Data<relay.Stats>;
export type Settings = Data<relay.Settings>;
export type WorkerState = "idle" | "running" | "paused" | "disabled" | "error" | "limited";
export type PromptMode = "stdin" | "file" | "argument";
export type WorkerConfig = Data<relay.WorkerConfig> & { promptMode: PromptMode };
export type WorkerStatus = Data<relay.WorkerStatus> & { state: WorkerState; promptMode: PromptMode };
export type WorkerLimits = Data<app.WorkerLimits>;
export type WorkersOverview = { paused: boolean; maxChainDepth: number; workers: WorkerStatus[] };
export type Harness = Data<app.Harness>;
export type LocalInfo = Data<app.LocalInfo>;
export type SessionChoice = Data<app.SessionChoice>;
export type ConnectInput = Omit<Data<app.ConnectInput>, "worker"> & { worker?: WorkerConfig };
export type ConnectResult = Omit<Data<app.ConnectResult>, "worker"> & { worker?: WorkerStatus };
export type StepKind = "start" | "message" | "thinking" | "plan" | "command" | "tool" | "file" | "files" | "output" | "error" | "warning" | "sandbox" | "end";
export type StepStatus = "running" | "ok" | "failed";
export type FileChange = "added" | "changed" | "deleted";
export type ChangedFile = Data<relay.ChangedFile> & { change: FileChange };
export type ActivityEntry = Omit<Data<relay.ActivityEntry>, "files"> & { kind: StepKind; status?: StepStatus; files?: ChangedFile[] };
export type FilePreview = Data<app.FilePreview>;
export type MeshStatus = Data<app.MeshStatus>;
export type MeshRelay = Data<mesh.RelayInfo>;
export type MeshAgent = Data<mesh.AgentInfo>;
export type MeshHeld = Data<mesh.HeldInfo>;
export type MeshNameContest = Data<mesh.NameContest>;
export type MeshKeyChange = Data<mesh.KeyChange>;
export type NameChange = Data<relay.NameChange>;
export type MeshSettings = Data<relay.MeshSettings>;
export type MeshSettingsView = Data<app.MeshSettingsView> & { source: "flags" | "settings" | "none" };
export type ActivityInsights = Data<relay.ActivityInsights>;
export type ThroughputBucket = Data<relay.ThroughputBucket>;
export type AgentLatency = Data<relay.AgentLatency>;
export type OpenWork = Data<relay.OpenWork>;
export type AgentOutcomes = Data<relay.AgentOutcomes>;
export type ConversationTask = Data<relay.ConversationTask> & { status: TaskStatus };
export type Conversation = Omit<Data<relay.Conversation>, "tasks"> & { tasks: ConversationTask[] };

/** A relay.Change as delivered by the window or the SSE stream. "resync" asks for a snapshot reload. */
export interface Change {
  type: "task" | "tasks-removed" | "agent" | "agent-removed" | "event" | "invite" | "settings" | "activity" | "worker" | "resync";
  task?: TaskSummary;
  ids?: string[];
  agent?: Agent;
  slug?: string;
  event?: RelayEvent;
  invite?: Invite;
  settings?: Settings;
  taskId?: string;
  entries?: ActivityEntry[];
  worker?: WorkerStatus;
}
// Keep Change in step with the generated model (if it is ever bound).
type _ChangeKeys = keyof Omit<Change, "type">;
const _changeKeys: Record<_ChangeKeys, true> = {
  task: true,
  ids: true,
  agent: true,
  slug: true,
  event: true,
  invite: true,
  settings: true,
  taskId: true,
  entries: true,
  worker: true,
};
void _changeKeys;

/** Api is everything the UI may ask of the relay. Stores take it as a parameter, so tests pass fakes. */
export interface Api {
  tasks: {
    list(f: TaskFilter): Promise<TaskSummary[]>;
    get(id: string): Promise<TaskDetail>;
    post(t: NewTask): Promise<Task>;
    cancel(id: string, reason: string): Promise<Task>;
    requeue(id: string, note: string): Promise<Task>;
    requestChanges(id: string, note: string): Promise<Task>;
    /** The steps of the task's worker runs, oldest first. */
    activity(id: string): Promise<ActivityEntry[]>;
    /** A picture a run made, as a data URL (this computer only). */
    filePreview(id: string, path: string): Promise<FilePreview>;
    /** Shows a file a run made in the file manager (this computer only). */
    revealFile(id: string, path: string): Promise<void>;
  };
  /** Workers run agents' tasks with an agent CLI; setting them up is for this computer only. */
  workers: {
    list(): Promise<WorkersOverview>;
    /** The bounds and defaults the relay enforces on a worker's settings. */
    limits(): Promise<WorkerLimits>;
    local(): Promise<LocalInfo>;
    connect(i: ConnectInput): Promise<ConnectResult>;
    save(c: WorkerConfig): Promise<WorkerStatus>;
    remove(slug: string): Promise<void>;
    setPaused(paused: boolean): Promise<boolean>;
    /** The sessions of an agent CLI (claude-code, codex) that ran in a folder: the worker form's session picker. */
    sessions(harness: string, workdir: string): Promise<SessionChoice[]>;
  };
  agents: {
    list(): Promise<Agent[]>;
    create(a: CreateAgentInput): Promise<TokenReveal>;
    update(slug: string, p: ProfileUpdate): Promise<Agent>;
    rotateToken(slug: string): Promise<TokenReveal>;
    revokeToken(slug: string): Promise<Agent>;
    remove(slug: string): Promise<void>;
  };
  invites: {
    create(i: InviteInput): Promise<InviteCreated>;
    list(): Promise<Invite[]>;
    revoke(id: string): Promise<Invite>;
  };
  overview: { info(): Promise<Info>; stats(): Promise<Stats> };
  events: { list(f: EventFilter): Promise<RelayEvent[]> };
  /**
   * The charts' aggregates, for a viewer tzOffsetMinutes east of UTC
   * (-getTimezoneOffset()): the Activity page's, the Agents page's, and the
   * whole conversation of a task.
   */
  insights: {
    activity(tzOffsetMinutes: number): Promise<ActivityInsights>;
    agents(tzOffsetMinutes: number): Promise<AgentOutcomes[]>;
    conversation(taskId: string): Promise<Conversation>;
  };
  settings: { get(): Promise<Settings>; update(s: Settings): Promise<Settings> };
  /** The mesh of relays over NATS; the settings are for this computer only. */
  mesh: {
    status(): Promise<MeshStatus>;
    agents(): Promise<MeshAgent[]>;
    settings(): Promise<MeshSettingsView>;
    saveSettings(s: MeshSettings): Promise<MeshSettingsView>;
    /**
     * trust admits a relay (by id): exactly the key with the fingerprint shown
     * is pinned (refused if the relay's keys changed since), and its held
     * tasks are delivered.
     */
    trust(relayId: string, fingerprint: string): Promise<MeshRelay>;
    /** block refuses a relay (by id): what it sends is kept, never delivered, and its queued tasks are cancelled. */
    block(relayId: string): Promise<MeshRelay>;
    /**
     * giveName gives the plain name slug to relay relayId's agent of that
     * slug (a name contest settled): the agent that had it takes its
     * qualified name; every task, update and worker's allowed senders keep
     * naming the agents they named.
     */
    giveName(slug: string, relayId: string): Promise<NameChange[]>;
  };
  system: {
    startsAtLogin(): Promise<boolean>;
    setStartAtLogin(on: boolean): Promise<boolean>;
    revealDataFolder(): Promise<void>;
    adminToken(): Promise<string>;
    /** The native folder picker (window only; "" when cancelled). */
    pickFolder(title: string, start: string): Promise<string>;
    /** The native file picker for a program (window only; "" when cancelled). */
    pickProgram(title: string, start: string): Promise<string>;
  };
  /** Subscribes to relay changes; returns the unsubscribe function. */
  onChange(cb: (c: Change) => void): () => void;
  /** Subscribes to connection state of the change stream (browser only). */
  onConnection(cb: (connected: boolean) => void): () => void;
  setTitle(title: string): void;
  copy(text: string): Promise<boolean>;
}

/**
 * reached is the origin the dashboard was reached at in a browser ("" in the
 * native window). The Go methods that name the relay's address to agents
 * (invites, token reveals, Info) have an …At variant that takes it, so an agent elsewhere is told
 * the address that works from where the operator stands (unless the relay
 * has --public-url).
 */
function reached(): string {
  return inBrowser ? window.location.origin : "";
}

// norm wraps a binding so every rejection (and a missing runtime) becomes an ApiError.
function norm<A extends unknown[], R>(fn: (...a: A) => Promise<R>): (...a: A) => Promise<R> {
  return async (...a: A) => {
    try {
      return await fn(...a);
    } catch (e) {
      throw toApiError(e);
    }
  };
}

export const api: Api = {
  tasks: {
    list: norm((f) => TasksB.List(f as relay.TaskFilter) as Promise<TaskSummary[]>),
    get: norm((id) => TasksB.Get(id) as Promise<TaskDetail>),
    post: norm((t) => TasksB.Post(t as app.NewTask) as Promise<Task>),
    cancel: norm((id, reason) => TasksB.Cancel(id, reason) as Promise<Task>),
    requeue: norm((id, note) => TasksB.Requeue(id, note) as Promise<Task>),
    requestChanges: norm((id, note) => TasksB.RequestChanges(id, note) as Promise<Task>),
    activity: norm(async (id) => ((await TasksB.Activity(id)) ?? []) as ActivityEntry[]),
    filePreview: norm((id, path) => TasksB.FilePreview(id, path)),
    revealFile: norm((id, path) => TasksB.RevealFile(id, path)),
  },
  workers: {
    list: norm(() => WorkersB.List() as Promise<WorkersOverview>),
    limits: norm(() => WorkersB.Limits()),
    local: norm(() => WorkersB.Local()),
    connect: norm((i) => WorkersB.Connect(i as app.ConnectInput) as Promise<ConnectResult>),
    save: norm((c) => WorkersB.Save(c as relay.WorkerConfig) as Promise<WorkerStatus>),
    remove: norm((slug) => WorkersB.Remove(slug)),
    setPaused: norm((p) => WorkersB.SetPaused(p)),
    sessions: norm((h, dir) => WorkersB.Sessions(h, dir)),
  },
  agents: {
    list: norm(() => AgentsB.List()),
    create: norm((a) => AgentsB.CreateAt(a as relay.CreateAgentInput, reached())),
    update: norm((slug, p) => AgentsB.Update(slug, p as relay.ProfileUpdate)),
    rotateToken: norm((slug) => AgentsB.RotateTokenAt(slug, reached())),
    revokeToken: norm((slug) => AgentsB.RevokeToken(slug)),
    remove: norm((slug) => AgentsB.Delete(slug)),
  },
  invites: {
    create: norm((i) => InvitesB.CreateAt(i as relay.InviteInput, reached())),
    list: norm(() => InvitesB.List()),
    revoke: norm((id) => InvitesB.Revoke(id)),
  },
  overview: { info: norm(() => OverviewB.InfoAt(reached())), stats: norm(() => OverviewB.Stats()) },
  events: { list: norm((f) => EventsB.List(f as relay.EventFilter)) },
  insights: {
    activity: norm((tz) => InsightsB.Activity(tz)),
    agents: norm(async (tz) => (await InsightsB.Agents(tz)) ?? []),
    conversation: norm((id) => InsightsB.Conversation(id) as Promise<Conversation>),
  },
  settings: { get: norm(() => SettingsB.Get()), update: norm((s) => SettingsB.Update(s as relay.Settings)) },
  mesh: {
    status: norm(() => MeshB.Status()),
    agents: norm(async () => (await MeshB.Agents()) ?? []),
    settings: norm(() => MeshB.MeshSettings() as Promise<MeshSettingsView>),
    saveSettings: norm((s) => MeshB.SaveMeshSettings(s as relay.MeshSettings) as Promise<MeshSettingsView>),
    trust: norm((id, fingerprint) => MeshB.Trust(id, fingerprint)),
    block: norm((id) => MeshB.Block(id)),
    giveName: norm(async (slug, id) => (await MeshB.GiveName(slug, id)) ?? []),
  },
  system: {
    startsAtLogin: norm(() => SystemB.StartsAtLogin()),
    setStartAtLogin: norm((on) => SystemB.SetStartAtLogin(on)),
    revealDataFolder: norm(() => SystemB.RevealDataFolder()),
    adminToken: norm(() => SystemB.AdminToken()),
    pickFolder: norm((title, start) => SystemB.PickFolder(title, start)),
    pickProgram: norm((title, start) => SystemB.PickProgram(title, start)),
  },
  onChange: (cb) => rt.EventsOn(CHANGE_EVENT, (c: Change) => cb(c)),
  onConnection: (cb) => rt.EventsOn(CONNECTION_EVENT, (on: boolean) => cb(on)),
  setTitle: (title) => rt.WindowSetTitle(title),
  copy: async (text) => {
    try {
      return (await rt.ClipboardSetText(text)) !== false;
    } catch {
      return false;
    }
  },
};

type Win = Window & { go?: unknown; runtime?: unknown };

/** inBrowser is true when no Wails runtime is present (served by `crosschat-relay serve`). */
export const inBrowser = typeof window !== "undefined" && !(window as Win).go;

let unauthorizedHandler: () => void = () => {};
/** onUnauthorized sets what happens when the bridge finds the session gone. */
export function onUnauthorized(fn: () => void) {
  unauthorizedHandler = fn;
}

/**
 * installShim defines window.go and window.runtime on top of the HTTP bridge
 * when the Wails runtime is absent. It must run before any binding is called.
 */
export function installShim(): void {
  const w = window as Win;
  if (w.go) return;
  const bridge = createBridge({
    fetch: (input, init) => window.fetch(input, init),
    EventSource: window.EventSource,
    onUnauthorized: () => unauthorizedHandler(),
  });
  w.go = bridge.go;
  w.runtime = bridge.runtime;
}

/** session is the browser sign-in; in the native window there is none. */
export const session = {
  get: (): Promise<SessionState> =>
    inBrowser ? createSessionClient((i, init) => window.fetch(i, init)).get() : Promise.resolve({ authenticated: true }),
  signIn: (token: string) => createSessionClient((i, init) => window.fetch(i, init)).signIn(token),
  signOut: () => createSessionClient((i, init) => window.fetch(i, init)).signOut(),
};
