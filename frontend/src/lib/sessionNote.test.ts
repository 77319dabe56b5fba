import { describe, expect, it } from "vitest";
import { SESSION_ENDED, forgetSignedIn, rememberSignedIn, signInNote } from "./sessionNote";

function memory() {
  const m = new Map<string, string>();
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), removeItem: (k: string) => void m.delete(k) };
}

describe("sessionNote", () => {
  it("says nothing on a first visit, why after a lost session, nothing after a sign-out by hand", () => {
    const s = memory();
    expect(signInNote(s)).toBe("");
    rememberSignedIn(s);
    expect(signInNote(s)).toBe(SESSION_ENDED);
    forgetSignedIn(s);
    expect(signInNote(s)).toBe("");
  });

  it("names the usual causes: the session's 12 hours (internal/web/session.go) and a relay restart, for this tab", () => {
    expect(SESSION_ENDED).toContain("12 hours");
    expect(SESSION_ENDED).toMatch(/relay restart/);
    expect(SESSION_ENDED).toMatch(/this tab/);
    // Each tab signs in on its own: another tab's sign-out does not end this one.
    expect(SESSION_ENDED).not.toMatch(/elsewhere/);
  });

  it("stays quiet when storage refuses", () => {
    const refuses = {
      getItem: () => {
        throw new Error("denied");
      },
      setItem: () => {
        throw new Error("denied");
      },
      removeItem: () => {
        throw new Error("denied");
      },
    };
    expect(() => rememberSignedIn(refuses)).not.toThrow();
    expect(() => forgetSignedIn(refuses)).not.toThrow();
    expect(signInNote(refuses)).toBe("");
  });
});
