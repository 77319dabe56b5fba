package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestJSONString: jsonString decodes exactly as json.Unmarshal into a
// string does, on its fast path and off it.
func TestJSONString(t *testing.T) {
	cases := []string{
		`""`, `"plain"`, `"with space and ümlaut → “quotes”"`, `"😀"`,
		`"esc\"aped"`, `"back\\slash"`, `"\u00e9\n\t"`, `"\ud83d\ude00"`, `"lone \ud800"`,
		"\"bad \xff utf-8\"", "\"cut \xe2\x80\"",
		`123`, `null`, `["a"]`, `{"a":1}`, `"`, `"unterminated`,
	}
	for _, c := range cases {
		var want string
		wantErr := !strings.HasPrefix(c, `"`) || json.Unmarshal([]byte(c), &want) != nil
		got, ok := jsonString(json.RawMessage(c))
		if ok == wantErr || got != want {
			t.Errorf("jsonString(%q) = %q, %v; json.Unmarshal gives %q, error %v", c, got, ok, want, wantErr)
		}
	}
}

// FuzzJSONString: any valid JSON string decodes as json.Unmarshal does.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"plain", "a\"b", "\\", "\xff", "\u2028", "\x01"} {
		b, _ := json.Marshal(s)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want string
		if !strings.HasPrefix(raw, `"`) || json.Unmarshal([]byte(raw), &want) != nil {
			return
		}
		got, ok := jsonString(json.RawMessage(raw))
		if !ok || got != want {
			t.Fatalf("jsonString(%q) = %q, %v; json.Unmarshal gives %q", raw, got, ok, want)
		}
	})
}

// TestNeedsHTMLEscape: exactly the characters encoding/json escapes in
// HTML-safe mode; other three-byte characters starting with 0xE2
// (arrows, typographic quotes) need no escape pass.
func TestNeedsHTMLEscape(t *testing.T) {
	cases := map[string]bool{
		"plain": false, "a<b": true, "a>b": true, "a&b": true, "line\u2028sep": true, "para\u2029sep": true,
		"“quoted” → next": false, "…": false, "\xe2": false, "\xe2\x80": false, "": false,
	}
	for s, want := range cases {
		if got := needsHTMLEscape(s); got != want {
			t.Errorf("needsHTMLEscape(%q) = %v, want %v", s, got, want)
		}
		var esc bytes.Buffer
		json.HTMLEscape(&esc, []byte(s))
		if changed := esc.String() != s; changed != want {
			t.Errorf("json.HTMLEscape changes %q: %v, but needsHTMLEscape says %v", s, changed, want)
		}
	}
}

// readBodyCase is a body and the Content-Length a request announces.
type readBodyCase struct {
	name   string
	body   io.Reader
	length int64
	want   string
	err    bool
}

// errAfter returns s, then err.
type errAfter struct {
	s   string
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if e.s == "" {
		return 0, e.err
	}
	n := copy(p, e.s)
	e.s = e.s[n:]
	return n, nil
}

// TestReadBody: readBody reads what io.ReadAll would, whatever the
// Content-Length says.
func TestReadBody(t *testing.T) {
	boom := errors.New("boom")
	cases := []readBodyCase{
		{"exact", strings.NewReader("hello"), 5, "hello", false},
		{"unknown length", strings.NewReader("hello"), -1, "hello", false},
		{"empty", strings.NewReader(""), 0, "", false},
		{"shorter than announced", strings.NewReader("hel"), 5, "hel", false},
		{"longer than announced", strings.NewReader("hello world"), 5, "hello world", false},
		{"huge announced length", strings.NewReader("hi"), 1 << 40, "hi", false},
		{"error within", &errAfter{"hel", boom}, 5, "hel", true},
		{"error after the end", &errAfter{"hello", boom}, 5, "hello", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &http.Request{Body: io.NopCloser(c.body), ContentLength: c.length}
			got, err := readBody(r)
			if string(got) != c.want || (err != nil) != c.err {
				t.Errorf("readBody = %q, %v; want %q, error %v", got, err, c.want, c.err)
			}
		})
	}
}

// envelopeKeysRef is envelopeKeysOnly by way of encoding/json: the keys of
// the object and of its params object (when params is one), decoded, must
// be among the envelope's.
func envelopeKeysRef(body []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return false
	}
	for k, v := range top {
		switch k {
		case "jsonrpc", "id", "method":
		case "params":
			if bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				var params map[string]json.RawMessage
				if json.Unmarshal(v, &params) != nil {
					return false
				}
				for k := range params {
					if k != "name" && k != "arguments" {
						return false
					}
				}
			}
		default:
			return false
		}
	}
	return true
}

func TestEnvelopeKeysOnly(t *testing.T) {
	cases := map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{"x":{"y":[1,{"z":"}"}]}}}}`: true,
		` { "jsonrpc" : "2.0" , "id" : "a\"b}" , "params" : { "name" : "w" } } `:                                          true,
		`{}`:              true,
		`{"params":null}`: true,
		`{"params":{}}`:   true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w"},"x":1}`: false,
		`{"jsonrpc":"2.0","params":{"name":"w","_meta":{}}}`:                         false,
		`{"Method":"tools/call"}`: false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","Arguments":{}}}`: false,
		`{"me\u0074hod":"tools/call"}`: false, // an escaped key goes to mcp-go
		`[]`:                           false,
		`{"params":,}`:                 false, // not JSON: refused, no panic
		`{"params":{"name":"w",}}`:     false,
		`"x"`:                          false,
		`{"params":{"name":"w","arguments":[1,2,{"a":"]}"}]},"id":-1.5e3,"method":"m"}`: true,
	}
	for body, want := range cases {
		if got := envelopeKeysOnly([]byte(body)); got != want {
			t.Errorf("envelopeKeysOnly(%s) = %v, want %v", body, got, want)
		}
		if want && !envelopeKeysRef([]byte(body)) {
			t.Errorf("the reference refuses %s", body)
		}
	}
}

// FuzzEnvelopeKeysOnly: envelopeKeysOnly never panics; it never accepts a
// valid body encoding/json decodes with other keys, and accepts every valid
// body without escapes that it decodes with only the envelope's keys.
func FuzzEnvelopeKeysOnly(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
		`{"id":"}{","params":{"arguments":["\"",{"a":null}]}}`,
		`{"JSONRPC":"2.0"}`, `{"a":1}`, `{"params":[1]}`, `{"id":true,"id":false}`,
		`{"id":,}`, `{"params":{"name"`, `{"a":"\`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got := envelopeKeysOnly([]byte(body)) // must not panic, valid or not
		if !json.Valid([]byte(body)) {
			return
		}
		ref := envelopeKeysRef([]byte(body))
		if got && !ref {
			t.Fatalf("envelopeKeysOnly accepts %s, which holds other keys", body)
		}
		if ref && !got && !strings.Contains(body, `\`) {
			t.Fatalf("envelopeKeysOnly refuses %s, which holds only the envelope's keys", body)
		}
	})
}
