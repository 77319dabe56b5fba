// Test doubles: a fake Api with controllable answers and a change emitter.
import { vi } from "vitest";
import type {
  ActivityEntry,
  ActivityInsights,
  Agent,
  AgentOutcomes,
  Api,
  Change,
  Conversation,
  Harness,
  Invite,
  LocalInfo,
  MeshSettingsView,
  MeshRelay,
  MeshStatus,
  SessionChoice,
  RelayEvent,
  Settings,
  Stats,
  Task,
  TaskSummary,
  WorkerLimits,
  WorkerStatus,
} from "../api";

export const T0 = Date.parse("2026-03-01T12:00:00.000Z");
export const iso = (offsetMs = 0) => new Date(T0 + offsetMs).toISOString();

// taskBase holds the fields a task and its summary share; a task is its
// own conversation unless p says otherwise.
function taskBase(p: { id?: string }) {
  return {
    id: "t1",
    senderSlug: "operator",
    recipientSlug: "bob",
    title: "Fix the build",
    requiredCapabilities: [] as string[],
    priority: 2,
    status: "queued" as const,
    createdAt: iso(-60_000),
    updatedAt: iso(-60_000),
    depth: 0,
    conversationId: p.id ?? "t1",
    hops: 0,
  };
}

export function summary(p: Partial<TaskSummary> = {}): TaskSummary {
  return { ...taskBase(p), reportCount: 0, ...p };
}

export function task(p: Partial<Task> = {}): Task {
  return { ...taskBase(p), instructions: "Make CI green.", reports: [], ...p };
}

export function agent(p: Partial<Agent> = {}): Agent {
  return {
    slug: "bob",
    kind: "agent",
    displayName: "Bob",
    modelSlug: "model-x",
    capabilities: ["text-input", "text-output", "code-execution"],
    registeredAt: iso(-86_400_000),
    lastSeenAt: iso(-30_000),
    hasToken: true,
    ownerSet: { displayName: false, details: false },
    availability: "online",
    ...p,
  };
}

export function invite(p: Partial<Invite> = {}): Invite {
  return {
    id: "i1",
    createdAt: iso(-1000),
    expiresAt: iso(3_600_000),
    maxUses: 1,
    uses: 0,
    revoked: false,
    active: true,
    agents: [],
    ...p,
  };
}

export function event(seq: number, p: Partial<RelayEvent> = {}): RelayEvent {
  return { sequence: seq, recipientSlug: "operator", type: "task-progress", taskId: "t1", summary: `event ${seq}`, createdAt: iso(seq), ...p };
}

/** workerConfig is a worker's settings as a save call sends them (Workers.Save): its status without the state. */
export function workerConfig(p: Partial<WorkerStatus> = {}): Omit<WorkerStatus, "state"> {
  return {
    agentSlug: "bob",
    harness: "custom",
    command: "/usr/local/bin/agent",
    args: ["{prompt_file}"],
    promptMode: "file",
    workdir: "/home/me/project",
    extraDirs: [],
    allowedSenders: ["operator"],
    timeoutMinutes: 30,
    runsPerHour: 20,
    exclusive: true,
    enabled: true,
    env: [],
    sandbox: "",
    allowPaths: [],
    allowUnsandboxed: false,
    allowHookEdits: false,
    ...p,
  };
}

/** worker is a worker's settings and state as the relay reports them. */
export function worker(p: Partial<WorkerStatus> = {}): WorkerStatus {
  return { ...workerConfig(p), state: "idle", ...p };
}

/** limits are the relay's worker limits (Workers.Limits) as the Go side reports them. */
export function limits(p: Partial<WorkerLimits> = {}): WorkerLimits {
  return {
    defaultTimeoutMinutes: 30,
    maxTimeoutMinutes: 1440,
    defaultRunsPerHour: 20,
    maxRunsPerHour: 500,
    maxArgs: 64,
    maxExtraDirs: 20,
    maxSenders: 100,
    maxEnv: 50,
    maxAllowPaths: 32,
    envNamePattern: "^[A-Za-z_][A-Za-z0-9_]*$",
    ...p,
  };
}

export function step(seq: number, p: Partial<ActivityEntry> = {}): ActivityEntry {
  return { seq, at: iso(seq * 1000), kind: "output", text: `line ${seq}`, ...p };
}

export function harness(p: Partial<Harness> = {}): Harness {
  return { id: "claude-code", name: "Claude Code", found: true, canRun: true, extraDirs: true, path: "/usr/bin/claude", version: "2.1.0", ...p };
}

export const localInfo = (harnesses: Harness[] = [harness(), harness({ id: "cursor", name: "Cursor", found: false, canRun: false, path: undefined, version: undefined }), harness({ id: "custom", name: "Other command-line agent", path: undefined, version: undefined })]): LocalInfo => ({
  hostname: "Laptop.local",
  home: "/home/me",
  mcpUrl: "http://127.0.0.1:4318/mcp",
  harnesses,
  searchPath: "/usr/local/bin:/usr/bin:/bin",
});

export const stats = (p: Partial<Stats["tasks"]> = {}, doneToday = 0): Stats => ({
  tasks: { queued: 0, claimed: 0, blocked: 0, completed: 0, cancelled: 0, ...p },
  agents: { total: 2, online: 1 },
  doneToday,
});

export interface FakeApi extends Api {
  emit(c: Change): void;
  connection(on: boolean): void;
  listeners: number;
}

export function fakeApi(data: {
  agents?: Agent[];
  open?: TaskSummary[];
  done?: TaskSummary[];
  events?: RelayEvent[];
  invites?: Invite[];
  settings?: Settings;
  stats?: Stats;
  workers?: WorkerStatus[];
  activity?: ActivityEntry[];
  local?: LocalInfo;
  limits?: WorkerLimits;
  sessions?: SessionChoice[];
  /** Workers.Limits fails with this (a remote browser: local_only). */
  limitsError?: Error;
  mesh?: MeshStatus;
  meshSettings?: MeshSettingsView;
  insights?: ActivityInsights;
  outcomes?: AgentOutcomes[];
  /** Insights.Conversation's answer; by default the task alone. */
  conversation?: Conversation;
} = {}): FakeApi {
  const subs = new Set<(c: Change) => void>();
  const conn = new Set<(on: boolean) => void>();
  const api: FakeApi = {
    tasks: {
      list: vi.fn(async (f) => (f.statuses?.includes("queued") ? data.open ?? [] : data.done ?? [])),
      get: vi.fn(async (id: string) => ({ task: task({ id }), related: { children: [] } })),
      post: vi.fn(async (t) => task({ id: "new", ...t, status: "queued", createdAt: iso(), updatedAt: iso() })),
      cancel: vi.fn(async (id) => task({ id, status: "cancelled", updatedAt: iso(1) })),
      requeue: vi.fn(async (id) => task({ id, status: "queued", updatedAt: iso(1) })),
      requestChanges: vi.fn(async (id) => task({ id, status: "queued", updatedAt: iso(1) })),
      activity: vi.fn(async () => data.activity ?? []),
      filePreview: vi.fn(async (_id, path) => ({ path, type: "image/png", size: 68, dataUrl: "data:image/png;base64,iVBORw0KGgo=" })),
      revealFile: vi.fn(async () => undefined),
    },
    workers: {
      list: vi.fn(async () => ({ paused: data.settings?.workersPaused ?? false, maxChainDepth: 3, workers: data.workers ?? [] })),
      limits: vi.fn(async () => {
        if (data.limitsError) throw data.limitsError;
        return data.limits ?? limits();
      }),
      local: vi.fn(async () => data.local ?? localInfo()),
      connect: vi.fn(async (i) => ({
        agent: agent({ slug: i.slug, displayName: i.displayName }),
        connection: { configured: false, message: "Add the relay to the tool's MCP settings with this snippet.", snippet: '{"mcpServers":{}}' },
        token: "cca_new",
        worker: i.worker ? worker({ ...i.worker }) : undefined,
      })),
      save: vi.fn(async (c) => worker({ ...c })),
      remove: vi.fn(async () => undefined),
      setPaused: vi.fn(async (p) => p),
      sessions: vi.fn(async () => data.sessions ?? []),
    },
    agents: {
      list: vi.fn(async () => data.agents ?? []),
      create: vi.fn(async (a) => ({
        agent: agent({ slug: a.slug, displayName: a.displayName }),
        token: "cca_secret",
        mcpUrl: "http://127.0.0.1:4318/mcp",
        setup: {
          claudeCode: "claude mcp add …cca_secret",
          claudeChannel: '{"mcpServers":{}}',
          claudeChannelStart: "claude --dangerously-load-development-channels server:crosschat",
          codex: "codex …",
          json: { mcpServers: {} },
          generic: "Add it.",
        },
        instructions: `Your slug is ${a.slug}.`,
      })),
      update: vi.fn(async (slug, p) => agent({ slug, displayName: p.displayName ?? "Bob" })),
      rotateToken: vi.fn(),
      revokeToken: vi.fn(async (slug) => agent({ slug, hasToken: false })),
      remove: vi.fn(async () => undefined),
    },
    invites: {
      create: vi.fn(async (i) => ({ invite: invite({ id: "new", label: i.label }), code: "cci_abc", message: "# Join\nInvite code: cci_abc" })),
      list: vi.fn(async () => data.invites ?? []),
      revoke: vi.fn(async (id) => invite({ id, revoked: true, active: false })),
    },
    overview: {
      info: vi.fn(async () => ({ version: "1.0", operatorSlug: "operator", dashboardUrl: "", mcpUrl: "http://x/mcp", dataDir: "/d", retentionDays: 30 })),
      stats: vi.fn(async () => data.stats ?? stats()),
    },
    events: { list: vi.fn(async () => data.events ?? []) },
    insights: {
      activity: vi.fn(async () => data.insights ?? activityInsights()),
      agents: vi.fn(async () => data.outcomes ?? []),
      conversation: vi.fn(async (id: string) => data.conversation ?? { id, tasks: [{ ...taskBase({ id }), id }] }),
    },
    settings: {
      get: vi.fn(async () => data.settings ?? { maxChainDepth: 3, workersPaused: false }),
      update: vi.fn(async (s) => s),
    },
    mesh: {
      status: vi.fn(async () => data.mesh ?? meshStatus()),
      agents: vi.fn(async () => []),
      settings: vi.fn(async () => data.meshSettings ?? { saved: meshSettings(), source: "none" as const, applied: true }),
      saveSettings: vi.fn(async (s) => ({ saved: s, source: "none" as const, applied: false })),
      trust: vi.fn(async (id) => meshRelay({ id, state: "trusted" })),
      block: vi.fn(async (id) => meshRelay({ id, state: "blocked" })),
      giveName: vi.fn(async (slug, id) => [{ from: `${slug}@${id}`, to: slug }]),
    },
    system: {
      startsAtLogin: vi.fn(async () => false),
      setStartAtLogin: vi.fn(async (on) => on),
      revealDataFolder: vi.fn(async () => undefined),
      adminToken: vi.fn(async () => "admin"),
      pickFolder: vi.fn(async () => "/home/me/picked"),
      pickProgram: vi.fn(async () => "/usr/local/bin/picked"),
    },
    onChange(cb) {
      subs.add(cb);
      return () => subs.delete(cb);
    },
    onConnection(cb) {
      conn.add(cb);
      return () => conn.delete(cb);
    },
    setTitle: vi.fn(),
    copy: vi.fn(async () => true),
    emit: (c) => subs.forEach((s) => s(c)),
    connection: (on) => conn.forEach((s) => s(on)),
    get listeners() {
      return subs.size;
    },
  };
  return api;
}

/** activityInsights is Insights.Activity: 24 empty hours ending at T0 unless p says otherwise. */
export function activityInsights(p: Partial<ActivityInsights> = {}): ActivityInsights {
  return {
    throughput: Array.from({ length: 24 }, (_, i) => ({ start: iso((i - 23) * 3_600_000), posted: 0, completed: 0, blocked: 0 })),
    latencySince: iso(-7 * 86_400_000),
    latencies: [],
    openWork: [],
    at: iso(),
    ...p,
  };
}

/** meshStatus is Mesh.Status: not in a mesh unless p says otherwise. */
export function meshStatus(p: Partial<MeshStatus> = {}): MeshStatus {
  return {
    enabled: false,
    relayId: "",
    relayName: "",
    publicKey: "",
    link: "",
    ready: false,
    outboxDepth: 0,
    consumerLag: 0,
    consumerAckPending: 0,
    published: 0,
    applied: 0,
    duplicates: 0,
    failures: 0,
    trust: "approval",
    credential: { checked: false, listed: false },
    strict: false,
    held: [],
    refused: {},
    names: [],
    keyChanges: [],
    relays: [],
    ...p,
  };
}

/** meshRelay is one mesh.RelayInfo: a trusted remote relay unless p says otherwise. */
export function meshRelay(p: Partial<MeshRelay> = {}): MeshRelay {
  return {
    id: "b2",
    name: "gpu-box",
    online: true,
    lastSeen: "",
    agents: 0,
    outboxDepth: 0,
    consumerLag: 0,
    self: false,
    state: "trusted",
    fingerprint: "SHA256:Zm9vYmFy",
    inDirectory: true,
    ...p,
  };
}

export function meshSettings(p: Partial<MeshSettingsView["saved"]> = {}): MeshSettingsView["saved"] {
  return { urls: [], creds: "", nkey: "", tlsCa: "", embed: "", name: "", strict: false, ...p };
}
