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

// envelopeKeysRef is the key check of readEnvelope by way of
// encoding/json: the keys of the object and of its params object (when
// params is one), decoded, must be among the envelope's.
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

// refEnvelope is the envelope as the lean path decoded it with
// encoding/json before readEnvelope.
type refEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// repeatsKeys reports whether the JSON object b, or its params object,
// holds a key twice (by way of json.Decoder's tokens).
func repeatsKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var walk func(depth int) bool
	walk = func(depth int) bool {
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return false
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return false
			}
			k := tok.(string)
			if seen[k] {
				return true
			}
			seen[k] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return false
			}
			if depth == 0 && k == "params" && bytes.HasPrefix(v, []byte("{")) {
				inner := json.NewDecoder(bytes.NewReader(v))
				saved := dec
				dec = inner
				rep := walk(1)
				dec = saved
				if rep {
					return true
				}
			}
		}
		return false
	}
	return walk(0)
}

// checkEnvelope fails t when readEnvelope reads the valid JSON body other
// than encoding/json decodes it, or refuses a body it should take: one with
// only the envelope's keys, none twice, no escapes, params an object and
// each member of the type the envelope's struct holds.
func checkEnvelope(t *testing.T, body []byte) (leanEnvelope, bool) {
	t.Helper()
	env, ok := readEnvelope(body) // must not panic, valid or not
	if !json.Valid(body) {
		return env, ok
	}
	var ref refEnvelope
	refErr := json.Unmarshal(body, &ref)
	if ok {
		switch {
		case !envelopeKeysRef(body):
			t.Fatalf("readEnvelope accepts %s, which holds other keys", body)
		case refErr != nil:
			t.Fatalf("readEnvelope accepts %s, which encoding/json refuses: %v", body, refErr)
		case repeatsKeys(body):
			t.Fatalf("readEnvelope accepts %s, which repeats a key", body)
		case env.params != (ref.Params != nil):
			t.Fatalf("readEnvelope accepts %s: params %v, encoding/json's %v", body, env.params, ref.Params)
		case env.jsonrpc != ref.JSONRPC || env.method != ref.Method || !bytes.Equal(env.id, ref.ID):
			t.Fatalf("readEnvelope(%s) = %+v, encoding/json decodes %+v", body, env, ref)
		case env.params && (env.name != ref.Params.Name || !bytes.Equal(env.arguments, ref.Params.Arguments)):
			t.Fatalf("readEnvelope(%s) = %+v, encoding/json decodes params %+v", body, env, *ref.Params)
		}
		return env, ok
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	nullParams := string(top["params"]) == "null" // no params: refused
	if refErr == nil && !nullParams && envelopeKeysRef(body) && !repeatsKeys(body) && !bytes.Contains(body, []byte(`\`)) {
		t.Fatalf("readEnvelope refuses %s, which encoding/json decodes with only the envelope's keys", body)
	}
	return env, ok
}

func TestReadEnvelope(t *testing.T) {
	cases := map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{"x":{"y":[1,{"z":"}"}]}}}}`: true,
		` { "jsonrpc" : "2.0" , "id" : "a\"b}" , "params" : { "name" : "w" } } `:                                          true,
		`{"params":{}}`:                    true,
		`{"params":{"name":null},"id":[]}`: true,
		`{}`:                               true, // no params: the caller refuses it
		`{"params":null}`:                  false,
		`{"params":[]}`:                    false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w"},"x":1}`: false,
		`{"jsonrpc":"2.0","params":{"name":"w","_meta":{}}}`:                         false,
		`{"Method":"tools/call"}`: false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","Arguments":{}}}`: false,
		`{"me\u0074hod":"tools/call"}`:             false, // an escaped key goes to mcp-go
		`{"method":"a","method":"b"}`:              false, // a repeated key goes to mcp-go
		`{"params":{"name":"a","name":"b"}}`:       false,
		`{"params":{"arguments":1,"arguments":2}}`: false,
		`{"jsonrpc":2}`:                            false,
		`{"params":{"name":true}}`:                 false,
		`[]`:                                       false,
		`{"params":,}`:                             false, // not JSON: refused, no panic
		`{"params":{"name":"w",}}`:                 false,
		`"x"`:                                      false,
		`{"params":{"name":"w","arguments":[1,2,{"a":"]}"}]},"id":-1.5e3,"method":"m"}`: true,
		`{"jsonrpc":"2\u002e0","params":{"name":"\u0077"}}`:                             true,
	}
	for body, want := range cases {
		if _, got := checkEnvelope(t, []byte(body)); got != want {
			t.Errorf("readEnvelope(%s) accepts: %v, want %v", body, got, want)
		}
	}
}

// FuzzReadEnvelope: readEnvelope never panics, reads every valid body it
// accepts as encoding/json decodes it, and accepts every valid body without
// escapes that encoding/json decodes with only the envelope's keys, each
// once and of its type (checkEnvelope).
func FuzzReadEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
		`{"id":"}{","params":{"arguments":["\"",{"a":null}]}}`,
		`{"JSONRPC":"2.0"}`, `{"a":1}`, `{"params":[1]}`, `{"id":true,"id":false}`,
		`{"id":,}`, `{"params":{"name"`, `{"a":"\`, `{`, `{"params":{"name":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkEnvelope(t, []byte(body))
	})
}

// checkArgumentFields fails t when argumentFields decodes the valid JSON
// object raw other than json.Unmarshal into a map does.
func checkArgumentFields(t *testing.T, raw []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	if !json.Valid(raw) || !bytes.HasPrefix(raw, []byte("{")) || json.Unmarshal(raw, &want) != nil {
		return
	}
	got, ok := argumentFields(raw)
	if !ok {
		t.Fatalf("argumentFields(%s) refuses it; json.Unmarshal gives %q", raw, want)
	}
	keys := map[string]bool{}
	for _, f := range got {
		keys[string(f.key)] = true
	}
	if len(keys) != len(want) {
		t.Fatalf("argumentFields(%s) has keys %v; json.Unmarshal gives %q", raw, keys, want)
	}
	for k, v := range want {
		if g, in := got.lookup(k); !in || !bytes.Equal(g, v) {
			t.Fatalf("argumentFields(%s) looks up %q as %q, json.Unmarshal gives %q", raw, k, g, v)
		}
	}
}

func TestArgumentFields(t *testing.T) {
	for _, raw := range []string{
		`{}`, ` { } `, `{"a":1,"b":"x","c":[1,{"d":null}],"e":{"f":"}"}}`, `{"a":1,"a":2}`,
		`{"\u0061":1,"a":2}`, `{"a":2,"\u0061":1}`, "{\"\xff\":1,\"\xfe\":2}", `{"a\"b":true}`,
		`{ "a" : "spaced" , "b" :false }`,
	} {
		checkArgumentFields(t, []byte(raw))
	}
}

// FuzzArgumentFields: argumentFields decodes every valid JSON object as
// json.Unmarshal into a map does.
func FuzzArgumentFields(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":[2]}`, `{"\u00e9":"x"}`, "{\"\xff\":1}", `{"a":{"b":"}"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkArgumentFields(t, []byte(raw)) })
}
