/** Default MCP listener of the desktop app: loopback, the relay's default port. */
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 4318;

/**
 * mcpUrl builds the streamable-HTTP MCP endpoint an agent connects to.
 * IPv6 literals are bracketed; the path is always exactly /mcp.
 */
export function mcpUrl(host: string = DEFAULT_HOST, port: number = DEFAULT_PORT, secure = false): string {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(`invalid port: ${port}`);
  }
  const h = host.trim() || DEFAULT_HOST;
  const bracketed = h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
  return `${secure ? "https" : "http"}://${bracketed}:${port}/mcp`;
}
