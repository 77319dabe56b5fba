import { describe, expect, it, vi } from "vitest";
import { ApiError } from "../api";
import { fieldRefusal, hasErrors, useSubmit } from "./submit";

/** deferred is a promise with its resolve and reject, to hold an action open. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe("useSubmit", () => {
  it("is busy while the action runs and ignores a second run meanwhile", async () => {
    const s = useSubmit();
    const d = deferred();
    const action = vi.fn(() => d.promise);
    const first = s.run(action);
    expect(s.busy.value).toBe(true);
    expect(await s.run(action)).toBe(false);
    expect(action).toHaveBeenCalledTimes(1);
    d.resolve();
    expect(await first).toBe(true);
    expect(s.busy.value).toBe(false);
    expect(s.error.value).toBe("");
  });

  it("shows a refusal as the error, not busy, and clears it on the next run", async () => {
    const s = useSubmit();
    const ok = await s.run(() => Promise.reject(new ApiError("invalid_request", "title: too long.")));
    expect(ok).toBe(false);
    expect(s.error.value).toBe("title: too long.");
    expect(s.busy.value).toBe(false);
    const d = deferred();
    const again = s.run(() => d.promise);
    expect(s.error.value).toBe("");
    d.resolve();
    expect(await again).toBe(true);
  });

  it("turns a thrown non-ApiError into a message too", async () => {
    const s = useSubmit();
    expect(await s.run(() => Promise.reject(new Error("socket hang up")))).toBe(false);
    expect(s.error.value).toContain("socket hang up");
  });

  it("marks a checked form touched and runs nothing while it is invalid", async () => {
    const s = useSubmit();
    const action = vi.fn(async () => undefined);
    let invalid = true;
    expect(s.touched.value).toBe(false);
    expect(await s.run(action, () => invalid)).toBe(false);
    expect(s.touched.value).toBe(true);
    expect(s.busy.value).toBe(false);
    expect(action).not.toHaveBeenCalled();
    invalid = false;
    expect(await s.run(action, () => invalid)).toBe(true);
    expect(action).toHaveBeenCalledTimes(1);
  });

  it("leaves touched alone for unchecked actions (remove, pick)", async () => {
    const s = useSubmit();
    await s.run(async () => undefined);
    expect(s.touched.value).toBe(false);
  });

  it.each([
    [{}, false],
    [{ title: "Title is required." }, true],
  ])("hasErrors(%o) is %s", (e, want) => {
    expect(hasErrors(e)).toBe(want);
  });
});

describe("fieldRefusal", () => {
  it.each([
    ["command: /x is not a program on this computer.", { field: "command", message: "/x is not a program on this computer." }],
    ["workdir: must be an absolute path.", { field: "workdir", message: "Must be an absolute path." }],
    ["title: is required.", null], // not one of the fields
    ["The relay is stopping.", null],
    ["command:no space", null],
  ])("reads %j", (msg, want) => {
    expect(fieldRefusal(msg, ["command", "workdir"])).toEqual(want);
  });
});
