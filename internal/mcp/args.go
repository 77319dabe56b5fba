package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// args reads tool arguments with strict JSON types. mcp-go does not check
// arguments against the input schema, so every getter does: a wrong type or an
// out-of-range value records an invalid_request error naming the field. The
// first error wins and is returned by err, in the style of bufio.Scanner, so a
// handler reads all its fields and checks once.
type args struct {
	fields argFields
	first  error
}

// argFields are the members of an arguments object, in order: a handful,
// so a slice searched from the end (the last of a repeated key wins, as in
// json.Unmarshal) rather than a map built for each call.
type argFields []argField

// argField is one member: its key, decoded, and its value as sent.
type argField struct {
	key []byte
	val json.RawMessage
}

// lookup returns the value of key, if it is there.
func (fs argFields) lookup(key string) (json.RawMessage, bool) {
	for i := len(fs) - 1; i >= 0; i-- {
		if string(fs[i].key) == key {
			return fs[i].val, true
		}
	}
	return nil, false
}

// parseArgs decodes the arguments of a tool call. Missing or null arguments
// are an empty object; anything else that is not an object is refused.
// Arguments the lean path decoded already, with the request (lean.go), come
// as an *args: they are decoded once.
func parseArgs(req mcp.CallToolRequest) *args {
	if a, ok := req.Params.Arguments.(*args); ok {
		return a
	}
	a := &args{}
	raw := req.Params.RawArguments
	if len(raw) == 0 && req.Params.Arguments != nil {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			a.fail("arguments: must be a JSON object.")
			return a
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return a
	}
	if raw[0] != '{' {
		a.fail("arguments: must be a JSON object.")
		return a
	}
	if !json.Valid(raw) {
		a.fail("arguments: must be a JSON object.")
		return a
	}
	fields, ok := argumentFields(raw)
	if !ok {
		a.fail("arguments: must be a JSON object.")
		return a
	}
	a.fields = fields
	return a
}

func (a *args) fail(format string, v ...any) {
	if a.first == nil {
		a.first = relay.Errorf(relay.EInvalidRequest, format, v...)
	}
}

// err returns the first argument error, or nil.
func (a *args) err() error { return a.first }

// acting ends the reading of a tool's arguments: it returns the first
// argument error, or else the slug p acts as, given supplied for field.
func (a *args) acting(p relay.Principal, field, supplied string) (string, error) {
	if err := a.err(); err != nil {
		return "", err
	}
	return p.ActingSlug(field, supplied)
}

// actingAs is acting for the slug the string argument field supplies.
func (a *args) actingAs(p relay.Principal, field string) (string, error) {
	return a.acting(p, field, a.str(field))
}

// get returns the raw value of field, or nil when it is absent or null.
func (a *args) get(field string) json.RawMessage {
	v, ok := a.fields.lookup(field)
	if !ok {
		return nil
	}
	v = bytes.TrimSpace(v)
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return nil
	}
	return v
}

// has reports whether field was given (and not null).
func (a *args) has(field string) bool { return a.get(field) != nil }

// str returns the string field, or "" when absent. Trimming and length checks
// are left to the relay validators, which know each field's limits.
func (a *args) str(field string) string {
	v := a.get(field)
	if v == nil {
		return ""
	}
	s, ok := jsonString(v)
	if !ok {
		a.fail("%s: must be a string.", field)
		return ""
	}
	return s
}

// jsonString decodes v as a JSON string, as json.Unmarshal into a string
// does. A string without escapes, all valid UTF-8 (almost every argument),
// is its own bytes; the rest goes through json.Unmarshal.
func jsonString(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if in := v[1 : len(v)-1]; v[len(v)-1] == '"' && plainJSONString(in) {
		return string(in), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// plainJSONString reports whether b, the inside of a JSON string, needs no
// decoding: no escapes, quotes or control characters, and valid UTF-8
// (json.Unmarshal replaces invalid bytes with U+FFFD).
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c == '"' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// optStr returns the string field, or nil when absent.
func (a *args) optStr(field string) *string {
	if !a.has(field) {
		return nil
	}
	s := a.str(field)
	return &s
}

// boolean returns the boolean field, or def when absent.
func (a *args) boolean(field string, def bool) bool {
	v := a.get(field)
	if v == nil {
		return def
	}
	switch string(v) {
	case "true":
		return true
	case "false":
		return false
	}
	a.fail("%s: must be true or false.", field)
	return def
}

// integer returns the integer field, or def when absent, and checks that it
// lies within lo..hi. A number with a zero fraction (e.g. 900.0) counts as an
// integer, as it does in JSON Schema.
func (a *args) integer(field string, def, lo, hi int) int {
	v := a.get(field)
	if v == nil {
		return def
	}
	n, ok := parseInteger(v)
	if !ok {
		a.fail("%s: must be an integer between %d and %d.", field, lo, hi)
		return def
	}
	if n < int64(lo) || n > int64(hi) {
		a.fail("%s: must be between %d and %d (got %s).", field, lo, hi, string(v))
		return def
	}
	return int(n)
}

// parseInteger parses a JSON number token that holds an integer. Values
// beyond the int64 range saturate, so they fail the caller's range check
// with the number shown as sent.
func parseInteger(v json.RawMessage) (int64, bool) {
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	var num json.Number
	if json.Unmarshal(v, &num) != nil {
		return 0, false
	}
	if n, err := strconv.ParseInt(num.String(), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(num.String(), 64)
	if err != nil && (!errors.Is(err, strconv.ErrRange) || f == 0) {
		return 0, false // not a number, or a fraction that underflowed
	}
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64, true
	case f <= math.MinInt64:
		return math.MinInt64, true
	case f != math.Trunc(f):
		return 0, false
	}
	return int64(f), true
}

// strings returns the string-array field, or def when absent. It reads at
// most limit entries: a longer array is refused as soon as entry limit+1
// is seen, before the rest is decoded (a 1 MiB body holds 262,000 "a").
func (a *args) strings(field string, def []string, limit int) []string {
	v := a.get(field)
	if v == nil {
		return def
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		a.fail("%s: must be an array of strings.", field)
		return def
	}
	out := make([]string, 0, min(limit, 8))
	for i := 0; dec.More(); i++ {
		if i == limit {
			a.fail("%s: at most %d entries.", field, limit)
			return def
		}
		var item json.RawMessage
		if dec.Decode(&item) != nil {
			a.fail("%s: must be an array of strings.", field)
			return def
		}
		s, ok := jsonString(bytes.TrimSpace(item))
		if !ok {
			a.fail("%s: entry %d must be a string.", field, i)
			return def
		}
		out = append(out, s)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		a.fail("%s: must be an array of strings.", field)
		return def
	}
	return out
}

// oneOf returns the string field and checks it against allowed values. It is
// required: a missing value is an error too.
func (a *args) oneOf(field string, allowed ...string) string {
	if !a.has(field) {
		a.fail("%s: is required (one of %s).", field, joinQuoted(allowed))
		return ""
	}
	s := a.str(field)
	if a.first != nil {
		return ""
	}
	for _, v := range allowed {
		if s == v {
			return s
		}
	}
	a.fail("%s: must be one of %s.", field, joinQuoted(allowed))
	return ""
}

func joinQuoted(vs []string) string {
	var b bytes.Buffer
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", v)
	}
	return b.String()
}
