import { describe, expect, it } from "vitest";
import { ApiError, toApiError } from "./errors";

describe("toApiError", () => {
  it.each([
    ["a Wails rejection 'code: message'", "unknown_task: No task abc.", "unknown_task", "No task abc."],
    ["a multi-line Wails message", "invalid_request: title: required.\nSecond line", "invalid_request", "title: required.\nSecond line"],
    ["plain text", "something broke", "internal_error", "something broke"],
    ["a bridge body", { error: "agent_exists", message: "Slug taken.", details: { slug: "bob" } }, "agent_exists", "Slug taken."],
    ["a formatted Wails error object", { code: "chain_limit", message: "Too deep." }, "chain_limit", "Too deep."],
    ["a network failure", new TypeError("Failed to fetch"), "network", "Cannot reach the relay. Is it still running?"],
    ["an Error with a coded message", new Error("task_update_denied: Not yours."), "task_update_denied", "Not yours."],
    ["nothing useful", 42, "internal_error", "The relay could not complete this request."],
  ])("normalizes %s", (_name, input, code, message) => {
    const e = toApiError(input);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe(code);
    expect(e.message).toBe(message);
  });

  it("keeps details and passes ApiErrors through", () => {
    const e = toApiError({ error: "agent_exists", message: "Taken.", details: { slug: "bob" } });
    expect(e.details).toEqual({ slug: "bob" });
    expect(toApiError(e)).toBe(e);
  });
});
