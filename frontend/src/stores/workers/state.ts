// Worker state, as pure functions the relay store applies: a task's run
// steps merged from the log and live changes, the latest run's state, the
// files its runs changed, and worker statuses kept in a map.
import type { ActivityEntry, ChangedFile, WorkerStatus } from "../../api";

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
