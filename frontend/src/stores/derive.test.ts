import { describe, expect, it } from "vitest";
import { attentionReason, countDoneToday, inviteState, inviteUses, isOnline, leaseLeft, matches, summarize } from "./derive";
import { agent, invite, iso, summary, task, T0 } from "../test/fakes";

describe("derive", () => {
  it.each([
    [-119_000, true],
    [-120_000, true],
    [-121_000, false],
  ])("isOnline with lastSeen %d ms ago = %s", (off, want) => {
    expect(isOnline(agent({ lastSeenAt: iso(off) }), T0)).toBe(want);
  });
  it("treats unknown agents as offline", () => expect(isOnline(undefined, T0)).toBe(false));
  it("keeps an agent a connection holds online past the window", () =>
    expect(isOnline(agent({ lastSeenAt: iso(-3_600_000), connected: true }), T0)).toBe(true));
  it("takes the relay's offline for an agent whose stream just closed", () =>
    expect(isOnline(agent({ lastSeenAt: iso(-1_000), availability: "offline" }), T0)).toBe(false));

  it.each([
    ["blocked", summary({ status: "blocked" }), "blocked"],
    ["claimed, lease running", summary({ status: "claimed", leaseExpiresAt: iso(1000) }), null],
    ["claimed, lease over", summary({ status: "claimed", leaseExpiresAt: iso(-1) }), "lease-expired"],
    ["queued 11 min, recipient offline", summary({ recipientSlug: "off", updatedAt: iso(-11 * 60_000) }), "recipient-offline"],
    ["queued 9 min, recipient offline", summary({ recipientSlug: "off", updatedAt: iso(-9 * 60_000) }), null],
    ["queued 11 min, recipient online", summary({ recipientSlug: "bob", updatedAt: iso(-11 * 60_000) }), null],
    ["queued 11 min, recipient unknown", summary({ recipientSlug: "who", updatedAt: iso(-11 * 60_000) }), "recipient-offline"],
    ["completed", summary({ status: "completed" }), null],
  ])("attention: %s", (_n, t, want) => {
    const agents = new Map([
      ["bob", agent({ slug: "bob", lastSeenAt: iso(-10_000) })],
      ["off", agent({ slug: "off", lastSeenAt: iso(-3_600_000) })],
    ]);
    expect(attentionReason(t, agents, T0)).toBe(want);
  });

  it("computes lease time left only for claimed tasks", () => {
    expect(leaseLeft(summary({ status: "claimed", leaseExpiresAt: iso(90_000) }), T0)).toBe(90_000);
    expect(leaseLeft(summary({ status: "queued", leaseExpiresAt: iso(90_000) }), T0)).toBeNull();
    expect(leaseLeft(summary({ status: "claimed" }), T0)).toBeNull();
  });

  it.each([
    ["active", invite(), "active", "0 of 1"],
    ["used up", invite({ uses: 1 }), "used-up", "1 of 1"],
    ["expired", invite({ expiresAt: iso(-1) }), "expired", "0 of 1"],
    ["revoked wins", invite({ revoked: true, uses: 1, expiresAt: iso(-1) }), "revoked", "1 of 1"],
    ["unlimited", invite({ maxUses: undefined, uses: 7 }), "active", "7 of ∞"],
  ])("invite state: %s", (_n, inv, state, uses) => {
    expect(inviteState(inv, T0)).toBe(state);
    expect(inviteUses(inv)).toBe(uses);
  });

  it("summarizes a task with its latest report cut to 280 characters", () => {
    const long = "word ".repeat(100);
    const s = summarize(task({ reports: [{ id: "r1", kind: "progress", message: "a", createdAt: iso() }, { id: "r2", kind: "completed", message: long, createdAt: iso(1) }] }));
    expect(s.reportCount).toBe(2);
    expect(s.latestReport?.kind).toBe("completed");
    expect(s.latestReport?.message).toHaveLength(280);
    expect(s.latestReport?.message.endsWith("…")).toBe(true);
    expect("instructions" in s).toBe(false);
  });

  it("filters by search text and agent", () => {
    const t = summary({ title: "Fix the build", latestReport: { kind: "progress", message: "Linker error", createdAt: iso() } });
    expect(matches(t, "BUILD", "")).toBe(true);
    expect(matches(t, "linker", "")).toBe(true);
    expect(matches(t, "deploy", "")).toBe(false);
    expect(matches(t, "", "bob")).toBe(true);
    expect(matches(t, "", "carol")).toBe(false);
  });

  it("counts tasks completed since local midnight", () => {
    const now = new Date(2026, 10, 29, 15, 0, 0).getTime();
    const at = (h: number) => new Date(2026, 10, 29, h, 0, 0).toISOString();
    const tasks = [
      { status: "completed" as const, updatedAt: at(9) },
      { status: "completed" as const, updatedAt: new Date(2026, 10, 28, 23, 0, 0).toISOString() },
      { status: "cancelled" as const, updatedAt: at(10) },
      { status: "completed" as const, updatedAt: at(14) },
    ];
    expect(countDoneToday(tasks, now)).toBe(2);
  });
});
