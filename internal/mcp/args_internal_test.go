package mcp

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestArgsStringsStopsAtItsBound: a string array longer than its bound is
// refused (invalid_request) as soon as the entry past the bound is seen:
// a 1 MiB array of "a" allocates a few KiB, not the 262,000 entries.
func TestArgsStringsStopsAtItsBound(t *testing.T) {
	var body bytes.Buffer
	body.WriteString(`["a"`)
	for body.Len() < 1<<20-8 {
		body.WriteString(`,"a"`)
	}
	body.WriteString(`]`)
	for _, tc := range []struct {
		name    string
		raw     string
		n       int // entries read, -1 for refused
		maxHeap uint64
	}{
		{"at the bound", `["a","b"]`, 2, 0},
		{"past the bound", `["a","b","c"]`, -1, 0},
		{"not an array", `"a"`, -1, 0},
		{"an entry not a string", `["a",1]`, -1, 0},
		{"empty", `[]`, 0, 0},
		{"a 1 MiB array", body.String(), -1, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := 2
			if tc.maxHeap > 0 {
				limit = relay.MaxCapabilities
			}
			a := &args{fields: argFields{{key: []byte("caps"), val: json.RawMessage(tc.raw)}}}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := a.strings("caps", nil, limit)
			runtime.ReadMemStats(&after)
			if tc.n < 0 {
				if got != nil || relay.ErrorCode(a.err()) != relay.EInvalidRequest {
					t.Fatalf("strings = %q, %v; want refused with invalid_request", got, a.err())
				}
			} else if a.err() != nil || len(got) != tc.n {
				t.Fatalf("strings = %q, %v; want %d entries", got, a.err(), tc.n)
			}
			t.Logf("allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
			if alloc := after.TotalAlloc - before.TotalAlloc; tc.maxHeap > 0 && alloc > tc.maxHeap {
				t.Fatalf("reading a 1 MiB array allocated %d bytes; want at most %d", alloc, tc.maxHeap)
			}
		})
	}
}
