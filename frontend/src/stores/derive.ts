// Pure rules the dashboard derives on the client, with a ticking clock:
// presence, what needs the operator's attention, lease time left, invite state.
import type { Agent, Invite, Report, Task, TaskStatus, TaskSummary } from "../api";
import { ms } from "../lib/time";

/** An agent not held by a connection is online this long after its last call (as the relay says). */
export const ONLINE_WINDOW_MS = 2 * 60 * 1000;
/** A queued task for an offline recipient needs attention after this long. */
export const STALE_QUEUE_MS = 10 * 60 * 1000;
/** A lease closer to its end than this is shown as a warning. */
export const LEASE_WARN_MS = 2 * 60 * 1000;
/** The Done column shows this many of the latest finished tasks. */
export const DONE_SHOWN = 30;

/**
 * isOnline follows the relay's presence: an agent a connection holds online
 * (an open push stream, its relay's word in a mesh) stays online until a
 * change says otherwise; one the relay calls offline (its last stream
 * closed) is offline; any other is online for the window after its last call,
 * which the ticking clock ends without a change from the relay.
 */
export function isOnline(agent: Pick<Agent, "lastSeenAt" | "availability" | "connected"> | undefined, now: number): boolean {
  if (!agent || agent.availability !== "online") return false;
  if (agent.connected) return true;
  const t = ms(agent.lastSeenAt);
  return !Number.isNaN(t) && now - t <= ONLINE_WINDOW_MS;
}

export type AttentionReason = "blocked" | "lease-expired" | "recipient-offline";

/** attentionReason tells why a task needs the operator, or null. */
export function attentionReason(
  task: TaskSummary,
  agents: ReadonlyMap<string, Agent>,
  now: number,
): AttentionReason | null {
  switch (task.status) {
    case "blocked":
      return "blocked";
    case "claimed": {
      const lease = ms(task.leaseExpiresAt);
      return !Number.isNaN(lease) && lease <= now ? "lease-expired" : null;
    }
    case "queued": {
      const waited = now - ms(task.updatedAt);
      return waited > STALE_QUEUE_MS && !isOnline(agents.get(task.recipientSlug), now) ? "recipient-offline" : null;
    }
    default:
      return null;
  }
}

export const ATTENTION_TEXT: Record<AttentionReason, string> = {
  blocked: "Blocked",
  "lease-expired": "Lease expired",
  "recipient-offline": "Recipient offline",
};

/** leaseLeft is the time left on a claimed task's lease in ms, or null when it has none. */
export function leaseLeft(task: Pick<TaskSummary, "status" | "leaseExpiresAt">, now: number): number | null {
  if (task.status !== "claimed") return null;
  const t = ms(task.leaseExpiresAt);
  return Number.isNaN(t) ? null : t - now;
}

export type InviteState = "active" | "used-up" | "expired" | "revoked";

export function inviteState(inv: Invite, now: number): InviteState {
  if (inv.revoked) return "revoked";
  if (inv.maxUses && inv.uses >= inv.maxUses) return "used-up";
  if (ms(inv.expiresAt) <= now) return "expired";
  return "active";
}

export const INVITE_STATE_TEXT: Record<InviteState, string> = {
  active: "Active",
  "used-up": "Used up",
  expired: "Expired",
  revoked: "Revoked",
};

/** "2 of 5", "1 of ∞". */
export function inviteUses(inv: Invite): string {
  return `${inv.uses} of ${inv.maxUses ? inv.maxUses : "∞"}`;
}

export const STATUS_TEXT: Record<TaskStatus, string> = {
  queued: "Queued",
  claimed: "In progress",
  blocked: "Blocked",
  completed: "Done",
  cancelled: "Cancelled",
};

export const PRIORITY_TEXT: Record<number, string> = { 1: "Low", 2: "Normal", 3: "Urgent" };

export type Column = "queued" | "claimed" | "blocked" | "done";
export const COLUMNS: { key: Column; title: string }[] = [
  { key: "queued", title: "Queued" },
  { key: "claimed", title: "In progress" },
  { key: "blocked", title: "Blocked" },
  { key: "done", title: "Done" },
];

export function columnOf(s: TaskStatus): Column {
  return s === "completed" || s === "cancelled" ? "done" : s;
}

/** byUrgency orders open work: higher priority first, then oldest first. */
export function byUrgency(a: TaskSummary, b: TaskSummary): number {
  return b.priority - a.priority || ms(a.createdAt) - ms(b.createdAt);
}

export function byNewest(a: TaskSummary, b: TaskSummary): number {
  return ms(b.updatedAt) - ms(a.updatedAt);
}

/** summarize turns a full task (an action's answer) into the summary lists hold. */
export function summarize(t: Task): TaskSummary {
  const { instructions: _i, reports, ...rest } = t;
  void _i;
  const last = reports?.length ? reports[reports.length - 1] : undefined;
  const s: TaskSummary = { ...rest, reportCount: reports?.length ?? 0 };
  if (last) {
    const msg = last.message.replace(/\s+/g, " ").trim();
    s.latestReport = { kind: last.kind, message: msg.length > 280 ? msg.slice(0, 279) + "…" : msg, createdAt: last.createdAt };
  }
  return s;
}

/** matches applies the search box and agent filter. */
export function matches(t: TaskSummary, query: string, agent: string): boolean {
  if (agent && t.senderSlug !== agent && t.recipientSlug !== agent) return false;
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return (
    t.title.toLowerCase().includes(q) ||
    (t.latestReport?.message.toLowerCase().includes(q) ?? false) ||
    t.id.toLowerCase().includes(q)
  );
}

/** countDoneToday counts tasks completed since local midnight of now. */
export function countDoneToday(tasks: Pick<TaskSummary, "status" | "updatedAt">[], now: number): number {
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  const from = midnight.getTime();
  return tasks.filter((t) => t.status === "completed" && Date.parse(t.updatedAt) >= from).length;
}

/** outcomeReport is the report that settled the task's current state: the latest "blocked" report of a blocked task, the latest "completed" report of a completed one. */
export function outcomeReport(task: Pick<Task, "status" | "reports">): Report | undefined {
  if (task.status !== "blocked" && task.status !== "completed") return undefined;
  return [...(task.reports ?? [])].reverse().find((r) => r.kind === task.status);
}
