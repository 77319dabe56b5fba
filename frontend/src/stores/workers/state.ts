// Pure rules for workers and their runs: merging live run steps, applying
// worker statuses, the worker line on agent cards, default slugs, and the
// connect / worker forms (checks and the payload the relay expects).
import type {
  ActivityEntry,
  ChangedFile,
  ConnectInput,
  Harness,
  PromptMode,
  WorkerConfig,
  WorkerStatus,
} from "../api";
import { MAX_DETAILS, MAX_SHORT, SLUG_RE, clean, text, validateSlug, type Errors } from "../lib/validate";

export const CUSTOM = "custom";
export const DEFAULT_TIMEOUT_MINUTES = 30;
export const MAX_TIMEOUT_MINUTES = 1440;
export const DEFAULT_RUNS_PER_HOUR = 20;
export const MAX_RUNS_PER_HOUR = 500;
export const MAX_EXTRA_DIRS = 20;
export const CUSTOM_ARGS = "{prompt_file}";

// --- run steps ----------------------------------------------------------------

/** RunStep is one row of the run view: the latest entry of its ref, at the place of its first. */
export interface RunStep {
  key: string;
  /** seq of the first entry of this row: its place in the list. */
  first: number;
  /** Which run of the task (1-based; a run begins with a start entry). */
  run: number;
  entry: ActivityEntry;
}

/**
 * mergeSteps adds entries (from Tasks.Activity or live changes) to the rows.
 * Entries with the same ref in the same run collapse into one row, the one
 * with the highest seq winning; an entry already seen is ignored; rows stay
 * ordered by the seq of their first entry.
 */
export function mergeSteps(steps: readonly RunStep[], incoming: readonly ActivityEntry[] | null | undefined): RunStep[] {
  const out = [...steps];
  const sorted = [...(incoming ?? [])].sort((a, b) => a.seq - b.seq);
  for (const e of sorted) {
    const run = out.filter((s) => s.entry.kind === "start" && s.first <= e.seq).length + (e.kind === "start" && !out.some((s) => s.first === e.seq) ? 1 : 0);
    const key = e.ref ? `r:${Math.max(run, 1)}:${e.ref}` : `s:${e.seq}`;
    const i = out.findIndex((s) => s.key === key);
    if (i >= 0) {
      if (e.seq > out[i].entry.seq) out[i] = { ...out[i], entry: e };
      continue;
    }
    const step: RunStep = { key, first: e.seq, run: Math.max(run, 1), entry: e };
    let at = out.length;
    while (at > 0 && out[at - 1].first > e.seq) at--;
    out.splice(at, 0, step);
  }
  return out;
}

export type RunState = "none" | "running" | "ok" | "failed";

/** runState is the state of the latest run: running until its end entry arrives. */
export function runState(steps: readonly RunStep[]): RunState {
  for (let i = steps.length - 1; i >= 0; i--) {
    const e = steps[i].entry;
    if (e.kind === "end") return e.status === "failed" ? "failed" : "ok";
    if (e.kind === "start") return "running";
  }
  return steps.length ? "running" : "none";
}

/** changedFiles lists the files the task's runs added, changed or deleted; the latest report of a path wins. */
export function changedFiles(steps: readonly RunStep[]): ChangedFile[] {
  const byPath = new Map<string, ChangedFile>();
  const entries = steps.map((s) => s.entry).sort((a, b) => a.seq - b.seq);
  for (const e of entries) {
    for (const f of e.files ?? []) {
      byPath.delete(f.path); // a later report moves it to its new place
      byPath.set(f.path, f);
    }
  }
  const order = { added: 0, changed: 1, deleted: 2 } as const;
  return [...byPath.values()].sort((a, b) => (order[a.change] ?? 3) - (order[b.change] ?? 3) || a.path.localeCompare(b.path));
}

const PICTURE = /\.(png|jpe?g|gif|webp)$/i;
/** isPicture tells whether a changed file can have a preview. */
export function isPicture(f: ChangedFile): boolean {
  return f.change !== "deleted" && PICTURE.test(f.path);
}

/** "0 B", "812 B", "4.2 KB", "1.3 MB". */
export function fileSize(n: number | undefined): string {
  if (n === undefined || n === null || Number.isNaN(n)) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** splitPath gives a file's folder and name, for a dense list. */
export function splitPath(p: string): { dir: string; name: string } {
  const i = Math.max(p.lastIndexOf("/"), p.lastIndexOf("\\"));
  return i < 0 ? { dir: "", name: p } : { dir: p.slice(0, i + 1), name: p.slice(i + 1) };
}

// --- worker statuses ----------------------------------------------------------

/** isRemoved: a removed worker arrives as a disabled status with an empty command. */
export function isRemoved(w: Pick<WorkerStatus, "command">): boolean {
  return !w.command;
}

/** applyWorker puts a worker status into the map, or takes the worker out when it was removed. */
export function applyWorker(map: Map<string, WorkerStatus>, w: WorkerStatus): void {
  if (isRemoved(w)) map.delete(w.agentSlug);
  else map.set(w.agentSlug, w);
}

export type WorkerTone = "idle" | "running" | "paused" | "off" | "error" | "limited";
export interface WorkerLine {
  tone: WorkerTone;
  text: string;
  taskId?: string;
}

/** workerLine is what an agent card says about its worker. */
export function workerLine(w: WorkerStatus | undefined, allPaused: boolean, timeOf: (iso: string) => string): WorkerLine | null {
  if (!w) return null;
  switch (w.state) {
    case "running":
      return { tone: "running", text: `Working on “${w.currentTask?.title ?? "a task"}”`, taskId: w.currentTask?.id };
    case "paused":
      return { tone: "paused", text: "Paused" };
    case "disabled":
      return { tone: "off", text: "Off" };
    case "error":
      return { tone: "error", text: `Error: ${w.error || "the worker stopped"}` };
    case "limited":
      return { tone: "limited", text: w.resumesAt ? `Hourly limit reached, resumes at ${timeOf(w.resumesAt)}` : "Hourly limit reached" };
    default:
      return allPaused ? { tone: "paused", text: "Paused" } : { tone: "idle", text: "Listening" };
  }
}

// --- slugs ----------------------------------------------------------------------

/** slugPart lowercases text into slug characters. */
export function slugPart(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9._:-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^[^a-z0-9]+|-+$/g, "");
}

/** defaultSlug is `<harness>-<hostname>`, lowercased, made unique with -2, -3… against existing slugs. */
export function defaultSlug(harness: string, hostname: string, existing: Iterable<string>): string {
  const taken = new Set(existing);
  let base = slugPart([harness, hostname.split(".")[0]].filter(Boolean).join("-")) || "agent";
  if (base.length < 2) base = `${base}-agent`;
  base = base.slice(0, 72).replace(/-+$/, "");
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

// --- forms ----------------------------------------------------------------------

export interface WorkerForm {
  harness: string;
  command: string;
  /** Custom programs: one argument per line. */
  args: string;
  promptMode: PromptMode;
  workdir: string;
  extraDirs: string[];
  allowedSenders: string[];
  exclusive: boolean;
  timeoutMinutes: number;
  runsPerHour: number;
  enabled: boolean;
  env: string[];
}

/** newWorkerForm is a new worker's defaults: only the operator's tasks, only this worker, 30 min, 20 runs per hour. */
export function newWorkerForm(h: Pick<Harness, "id" | "path"> | undefined, operator: string): WorkerForm {
  const custom = !h || h.id === CUSTOM;
  return {
    harness: h?.id ?? CUSTOM,
    command: custom ? "" : h?.path ?? "",
    args: custom ? CUSTOM_ARGS : "",
    promptMode: custom ? "file" : "stdin",
    workdir: "",
    extraDirs: [],
    allowedSenders: operator ? [operator] : [],
    exclusive: true,
    timeoutMinutes: DEFAULT_TIMEOUT_MINUTES,
    runsPerHour: DEFAULT_RUNS_PER_HOUR,
    enabled: true,
    env: [],
  };
}

/** workerFormFrom fills the form from a saved worker. */
export function workerFormFrom(w: WorkerConfig): WorkerForm {
  return {
    harness: w.harness,
    command: w.command,
    args: (w.args ?? []).join("\n"),
    promptMode: w.promptMode || "stdin",
    workdir: w.workdir,
    extraDirs: [...(w.extraDirs ?? [])],
    allowedSenders: [...(w.allowedSenders ?? [])],
    exclusive: w.exclusive,
    timeoutMinutes: w.timeoutMinutes || DEFAULT_TIMEOUT_MINUTES,
    runsPerHour: w.runsPerHour || DEFAULT_RUNS_PER_HOUR,
    enabled: w.enabled,
    env: [...(w.env ?? [])],
  };
}

/** isAbsolutePath accepts /unix, C:\windows and \\server paths. */
export function isAbsolutePath(p: string): boolean {
  return /^\//.test(p) || /^[A-Za-z]:[\\/]/.test(p) || /^\\\\/.test(p);
}

function argLines(s: string): string[] {
  return s
    .split("\n")
    .map((a) => a.trim())
    .filter(Boolean);
}

type WorkerField = "command" | "args" | "workdir" | "extraDirs" | "allowedSenders" | "timeoutMinutes" | "runsPerHour";

/** validateWorker mirrors the relay's checks that can be made here (the files' existence is the relay's). */
export function validateWorker(f: WorkerForm, opts: { commandRequired?: boolean } = {}): Errors<WorkerField> {
  const custom = f.harness === CUSTOM;
  const e: Errors<WorkerField> = {};
  const cmd = f.command.trim();
  if (!cmd) {
    if (custom || opts.commandRequired) e.command = "Choose the program to run.";
  } else if (!isAbsolutePath(cmd)) e.command = "Use the program's full path, like /usr/local/bin/agent.";
  if (custom) {
    const args = argLines(f.args);
    if (args.length > 64) e.args = "At most 64 arguments.";
    else if (f.promptMode === "file" && !args.some((a) => a.includes("{prompt_file}")))
      e.args = "With the prompt in a file, one argument must contain {prompt_file}.";
  }
  const dir = f.workdir.trim();
  if (!dir) e.workdir = "Choose the folder it works in.";
  else if (!isAbsolutePath(dir)) e.workdir = "Use the folder's full path.";
  const extra = f.extraDirs.map((d) => d.trim()).filter(Boolean);
  if (extra.length > MAX_EXTRA_DIRS) e.extraDirs = `At most ${MAX_EXTRA_DIRS} extra folders.`;
  else if (extra.some((d) => !isAbsolutePath(d))) e.extraDirs = "Use each folder's full path.";
  if (f.enabled && !f.allowedSenders.length) e.allowedSenders = "Choose whose tasks it takes, or turn the worker off.";
  if (!Number.isInteger(f.timeoutMinutes) || f.timeoutMinutes < 1 || f.timeoutMinutes > MAX_TIMEOUT_MINUTES)
    e.timeoutMinutes = `1 to ${MAX_TIMEOUT_MINUTES} minutes.`;
  if (!Number.isInteger(f.runsPerHour) || f.runsPerHour < 1 || f.runsPerHour > MAX_RUNS_PER_HOUR)
    e.runsPerHour = `1 to ${MAX_RUNS_PER_HOUR} runs.`;
  return clean(e);
}

/** workerPayload is the WorkerConfig to save for agent slug. */
export function workerPayload(slug: string, f: WorkerForm): WorkerConfig {
  const custom = f.harness === CUSTOM;
  return {
    agentSlug: slug,
    harness: f.harness,
    command: f.command.trim(),
    args: custom ? argLines(f.args) : [],
    promptMode: custom ? f.promptMode : "stdin",
    workdir: f.workdir.trim(),
    extraDirs: [...new Set(f.extraDirs.map((d) => d.trim()).filter(Boolean))],
    allowedSenders: [...f.allowedSenders],
    timeoutMinutes: f.timeoutMinutes,
    runsPerHour: f.runsPerHour,
    exclusive: f.exclusive,
    enabled: f.enabled,
    env: [...f.env],
  };
}

export interface ConnectForm {
  harness: string;
  displayName: string;
  slug: string;
  role: string;
  configureClient: boolean;
  runWorker: boolean;
  worker: WorkerForm;
}

/** newConnectForm: the dialog's defaults for a harness on this computer. */
export function newConnectForm(h: Harness, hostname: string, existing: Iterable<string>, operator: string): ConnectForm {
  const custom = h.id === CUSTOM;
  const host = hostname.split(".")[0];
  return {
    harness: h.id,
    displayName: custom ? `Agent on ${host}` : `${h.name} on ${host}`,
    slug: defaultSlug(h.id, hostname, existing),
    role: "",
    configureClient: !custom,
    runWorker: h.canRun,
    worker: newWorkerForm(h, operator),
  };
}

type ConnectField = "displayName" | "slug" | "role" | WorkerField;

export function validateConnect(f: ConnectForm, existing: Iterable<string> = []): Errors<ConnectField> {
  const slug = f.slug.trim().toLowerCase();
  let slugErr = validateSlug(slug);
  if (!slugErr && new Set(existing).has(slug)) slugErr = `${slug} is taken; choose another slug.`;
  const e: Errors<ConnectField> = {
    displayName: text(f.displayName, "Display name", 1, MAX_SHORT),
    slug: slugErr,
    role: text(f.role, "Role", 0, MAX_DETAILS),
    ...(f.runWorker ? validateWorker(f.worker, { commandRequired: false }) : {}),
  };
  return clean(e);
}

/** connectPayload is what Workers.Connect takes. */
export function connectPayload(f: ConnectForm): ConnectInput {
  const slug = f.slug.trim().toLowerCase();
  const out: ConnectInput = {
    harness: f.harness,
    slug,
    displayName: f.displayName.trim(),
    configureClient: f.harness !== CUSTOM && f.configureClient,
  };
  if (f.role.trim()) out.role = f.role.trim();
  if (f.runWorker) out.worker = workerPayload(slug, { ...f.worker, harness: f.harness });
  return out;
}

export { SLUG_RE };
