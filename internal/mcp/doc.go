// Package mcp serves the relay over the Model Context Protocol: the 14 tools
// of the Crosschat protocol and the crosschat://protocol resource, over
// stateless streamable HTTP (mark3labs/mcp-go).
//
// It is the only package that imports mcp-go; every mcp-go type stays inside
// it. NewHandler is the whole API: it takes a relay.Service and returns an
// http.Handler that the web layer mounts at /mcp behind its authentication.
package mcp
