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
