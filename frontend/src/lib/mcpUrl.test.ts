import { describe, expect, it } from "vitest";
import { DEFAULT_PORT, mcpUrl } from "./mcpUrl";

describe("mcpUrl", () => {
  it.each([
    { args: [] as Parameters<typeof mcpUrl>, want: `http://127.0.0.1:${DEFAULT_PORT}/mcp` },
    { args: ["localhost", 9000] as Parameters<typeof mcpUrl>, want: "http://localhost:9000/mcp" },
    { args: ["  ", 4318] as Parameters<typeof mcpUrl>, want: "http://127.0.0.1:4318/mcp" },
    { args: ["::1", 4318] as Parameters<typeof mcpUrl>, want: "http://[::1]:4318/mcp" },
    { args: ["[::1]", 4318] as Parameters<typeof mcpUrl>, want: "http://[::1]:4318/mcp" },
    { args: ["relay.example", 443, true] as Parameters<typeof mcpUrl>, want: "https://relay.example:443/mcp" },
  ])("mcpUrl($args) = $want", ({ args, want }) => {
    expect(mcpUrl(...args)).toBe(want);
  });

  it.each([0, -1, 65536, 1.5, Number.NaN])("rejects port %s", (port) => {
    expect(() => mcpUrl("127.0.0.1", port)).toThrow(RangeError);
  });
});
