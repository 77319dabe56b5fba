// How workers and their runs are shown: the worker line on agent cards,
// file sizes and paths in a run's changed files, which files get a preview.
import type { ChangedFile, WorkerStatus } from "../../api";

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
