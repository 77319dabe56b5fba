package web

import (
	"bytes"
	"io"
	"testing"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
)

// The body /mcp hands over is the one internal/mcp's lean path takes whole
// (ReadBody): checked when the tests build.
var _ relaymcp.ReadBody = (*wholeBody)(nil)

// TestWholeBodyIsReadBody: the handed-over body reads as its bytes and
// gives them whole, the same slice, through the interface internal/mcp
// asserts.
func TestWholeBodyIsReadBody(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0"}`)
	var r io.ReadCloser = &wholeBody{Reader: bytes.NewReader(body), b: body}
	rb, ok := r.(relaymcp.ReadBody)
	if !ok {
		t.Fatal("wholeBody is not an mcp.ReadBody")
	}
	if got := rb.Bytes(); &got[0] != &body[0] {
		t.Fatal("Bytes copied the body")
	}
	read, err := io.ReadAll(rb)
	if err != nil || !bytes.Equal(read, body) || rb.Close() != nil {
		t.Fatalf("read %q, %v; want the body", read, err)
	}
}
