// The connect and worker forms: their defaults, the checks that can be made
// before a round trip (against the limits the relay reports, Workers.Limits),
// and the payloads the relay expects.
import type { ConnectInput, Harness, PromptMode, WorkerConfig, WorkerLimits } from "../../api";
import { MAX_DETAILS, MAX_SHORT, clean, text, validateSlug, type Errors } from "../../lib/validate";

export const CUSTOM = "custom";
export const CUSTOM_ARGS = "{prompt_file}";

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

// --- the worker form ------------------------------------------------------------

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
  /** Names of the relay's environment variables passed to the program, separated by spaces, commas or lines. */
  env: string;
  /** The session each task is delivered into (an id or exact name; "" for a fresh run per task). */
  session: string;
  /** The id the saved session resolved to (kept while session is unchanged). */
  sessionId: string;
  /** Deliver a task that names a session into it (any session of the CLI that ran in the worker's folders), instead of one bound session. */
  anySession: boolean;
  /** The sandbox: "on", "off", or "" for the preset's default (SANDBOX_PRESETS). */
  sandbox: "" | "on" | "off";
  /** Further paths a sandboxed run may use, one per line: PATH read-only, PATH:rw read-write. */
  allowPaths: string;
  /** Run without the sandbox (with a warning) where the system cannot confine runs. */
  allowUnsandboxed: boolean;
  /** Let sandboxed runs change git configuration and hooks and the agent CLIs' project settings (otherwise undone after each run). */
  allowHookEdits: boolean;
}

/** SANDBOX_PRESETS are sandboxed unless their worker turns it off; the others only when turned on. */
export const SANDBOX_PRESETS = ["claude-code", "codex", "gemini"];

/** sandboxOn tells whether the form's runs are sandboxed (as the relay decides, WorkerConfig.SandboxOn). */
export function sandboxOn(f: Pick<WorkerForm, "harness" | "sandbox">): boolean {
  return f.sandbox === "" ? SANDBOX_PRESETS.includes(f.harness) : f.sandbox === "on";
}

/** SESSION_HARNESSES can be bound to an existing session. */
export const SESSION_HARNESSES = ["claude-code", "codex"];

/** newWorkerForm is a new worker's defaults: only the operator's tasks, only this worker, the relay's default limits. */
export function newWorkerForm(h: Pick<Harness, "id" | "path"> | undefined, operator: string, limits: WorkerLimits): WorkerForm {
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
    timeoutMinutes: limits.defaultTimeoutMinutes,
    runsPerHour: limits.defaultRunsPerHour,
    enabled: true,
    env: "",
    session: "",
    sessionId: "",
    anySession: false,
    sandbox: "",
    allowPaths: "",
    allowUnsandboxed: false,
    allowHookEdits: false,
  };
}

/** workerFormFrom fills the form from a saved worker. */
export function workerFormFrom(w: WorkerConfig, limits: WorkerLimits): WorkerForm {
  return {
    harness: w.harness,
    command: w.command,
    args: (w.args ?? []).join("\n"),
    promptMode: w.promptMode || "stdin",
    workdir: w.workdir,
    extraDirs: [...(w.extraDirs ?? [])],
    allowedSenders: [...(w.allowedSenders ?? [])],
    exclusive: w.exclusive,
    timeoutMinutes: w.timeoutMinutes || limits.defaultTimeoutMinutes,
    runsPerHour: w.runsPerHour || limits.defaultRunsPerHour,
    enabled: w.enabled,
    env: (w.env ?? []).join(" "),
    session: w.session ?? "",
    sessionId: w.sessionId ?? "",
    anySession: !!w.anySession,
    sandbox: w.sandbox === "on" || w.sandbox === "off" ? w.sandbox : "",
    allowPaths: (w.allowPaths ?? []).join("\n"),
    allowUnsandboxed: !!w.allowUnsandboxed,
    allowHookEdits: !!w.allowHookEdits,
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

/** envNames splits the form's environment field into names, each once, in order. */
export function envNames(s: string): string[] {
  return [...new Set(s.split(/[\s,;]+/).filter(Boolean))];
}

/** WORKER_FIELDS are the worker form's fields, by the names the relay's refusals give them. */
export const WORKER_FIELDS = ["command", "args", "workdir", "extraDirs", "allowedSenders", "timeoutMinutes", "runsPerHour", "env", "allowPaths", "session"] as const;
type WorkerField = Exclude<(typeof WORKER_FIELDS)[number], "session">;

/** allowPathLines splits the allowed paths field into entries, each once. */
export function allowPathLines(s: string): string[] {
  return [...new Set(argLines(s))];
}

/** validateWorker makes the relay's checks that can be made here (the files' existence is the relay's). */
export function validateWorker(f: WorkerForm, limits: WorkerLimits, opts: { commandRequired?: boolean } = {}): Errors<WorkerField> {
  const custom = f.harness === CUSTOM;
  const e: Errors<WorkerField> = {};
  const cmd = f.command.trim();
  if (!cmd) {
    if (custom || opts.commandRequired) e.command = "Choose the program to run.";
  } else if (!isAbsolutePath(cmd)) e.command = "Use the program's full path, like /usr/local/bin/agent.";
  if (custom) {
    const args = argLines(f.args);
    if (args.length > limits.maxArgs) e.args = `At most ${limits.maxArgs} arguments.`;
    else if (f.promptMode === "file" && !args.some((a) => a.includes("{prompt_file}")))
      e.args = "With the prompt in a file, one argument must contain {prompt_file}.";
  }
  const dir = f.workdir.trim();
  if (!dir) e.workdir = "Choose the folder it works in.";
  else if (!isAbsolutePath(dir)) e.workdir = "Use the folder's full path.";
  const extra = f.extraDirs.map((d) => d.trim()).filter(Boolean);
  if (extra.length > limits.maxExtraDirs) e.extraDirs = `At most ${limits.maxExtraDirs} extra folders.`;
  else if (extra.some((d) => !isAbsolutePath(d))) e.extraDirs = "Use each folder's full path.";
  if (f.enabled && !f.allowedSenders.length) e.allowedSenders = "Choose whose tasks it takes, or turn the worker off.";
  else if (f.allowedSenders.length > limits.maxSenders) e.allowedSenders = `At most ${limits.maxSenders} senders.`;
  if (!Number.isInteger(f.timeoutMinutes) || f.timeoutMinutes < 1 || f.timeoutMinutes > limits.maxTimeoutMinutes)
    e.timeoutMinutes = `1 to ${limits.maxTimeoutMinutes} minutes.`;
  if (!Number.isInteger(f.runsPerHour) || f.runsPerHour < 1 || f.runsPerHour > limits.maxRunsPerHour)
    e.runsPerHour = `1 to ${limits.maxRunsPerHour} runs.`;
  const env = envNames(f.env);
  const name = new RegExp(limits.envNamePattern);
  const bad = env.filter((n) => !name.test(n));
  if (env.length > limits.maxEnv) e.env = `At most ${limits.maxEnv} names.`;
  else if (bad.length) e.env = `Not a variable name: ${bad.join(", ")}.`;
  const allow = allowPathLines(f.allowPaths);
  if (allow.length > limits.maxAllowPaths) e.allowPaths = `At most ${limits.maxAllowPaths} paths.`;
  else if (allow.some((p) => !isAbsolutePath(p.replace(/:(rw|ro)$/, "")))) e.allowPaths = "Use each path's full path, with :rw at the end to allow writing.";
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
    env: envNames(f.env),
    sandbox: f.sandbox,
    allowPaths: allowPathLines(f.allowPaths),
    allowUnsandboxed: f.allowUnsandboxed,
    allowHookEdits: f.allowHookEdits,
    ...(SESSION_HARNESSES.includes(f.harness) && f.anySession ? { anySession: true } : {}),
    ...(SESSION_HARNESSES.includes(f.harness) && !f.anySession && f.session.trim() ? { session: f.session.trim(), sessionId: f.sessionId } : {}),
  };
}

// --- the connect form -----------------------------------------------------------

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
export function newConnectForm(h: Harness, hostname: string, existing: Iterable<string>, operator: string, limits: WorkerLimits): ConnectForm {
  const custom = h.id === CUSTOM;
  const host = hostname.split(".")[0];
  return {
    harness: h.id,
    displayName: custom ? `Agent on ${host}` : `${h.name} on ${host}`,
    slug: defaultSlug(h.id, hostname, existing),
    role: "",
    configureClient: !custom,
    runWorker: h.canRun,
    worker: newWorkerForm(h, operator, limits),
  };
}

type ConnectField = "displayName" | "slug" | "role" | WorkerField;

/** validateConnect checks the connect form; existing are the slugs already taken. */
export function validateConnect(f: ConnectForm, limits: WorkerLimits, existing: Iterable<string> = []): Errors<ConnectField> {
  const slug = f.slug.trim().toLowerCase();
  let slugErr = validateSlug(slug);
  if (!slugErr && new Set(existing).has(slug)) slugErr = `${slug} is taken; choose another slug.`;
  const e: Errors<ConnectField> = {
    displayName: text(f.displayName, "Display name", 1, MAX_SHORT),
    slug: slugErr,
    role: text(f.role, "Role", 0, MAX_DETAILS),
    ...(f.runWorker ? validateWorker(f.worker, limits, { commandRequired: false }) : {}),
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
