package mcp

// The lean path's JSON envelope scanner (lean.go): it reads a tools/call
// body's members and checks its numbers without decoding it into values.

import (
	"bytes"
	"encoding/json"
)

// leanEnvelope is a tools/call body's members as the lean path reads them:
// the strings decoded, id and arguments as written (nil when absent).
type leanEnvelope struct {
	jsonrpc, method, name string
	id, arguments         json.RawMessage
	params                bool // params is an object
}

// readEnvelope reads the valid JSON body as json.Unmarshal would decode it
// into the envelope's struct (jsonrpc, id, method, params: {name,
// arguments}), without reflection or copies. It reports false for anything
// the lean path leaves to mcp-go: a body that is not an object; a key that
// is not one of the envelope's own, spelled exactly and without escapes
// (encoding/json would also match other spellings); a key given twice; a
// string member that is not a string or null; params that is not an object.
func readEnvelope(body []byte) (leanEnvelope, bool) {
	var (
		env  leanEnvelope
		seen uint8 // a bit per key
	)
	once := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	ok := objectMembers(body, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc":
			return once(1) && stringOrNull(val, &env.jsonrpc)
		case "method":
			return once(2) && stringOrNull(val, &env.method)
		case "id":
			env.id = val
			return once(4)
		case "params":
			if !once(8) || val[0] != '{' {
				return false // null leaves no params, anything else json.Unmarshal refuses
			}
			env.params = true
			var inner uint8
			return objectMembers(val, func(key, val []byte) bool {
				switch string(key) {
				case "name":
					if inner&1 != 0 {
						return false
					}
					inner |= 1
					return stringOrNull(val, &env.name)
				case "arguments":
					if inner&2 != 0 {
						return false
					}
					inner |= 2
					env.arguments = val
					return true
				}
				return false
			})
		}
		return false
	})
	return env, ok
}

// argumentFields reads the members of the valid JSON object raw as
// json.Unmarshal into a map[string]json.RawMessage decodes them, keys and
// values sharing raw's bytes.
func argumentFields(raw []byte) (argFields, bool) {
	fields := make(argFields, 0, 8)
	if objectMembers(raw, func(key, val []byte) bool {
		fields = append(fields, argField{key: key, val: val})
		return plainJSONString(key)
	}) {
		return fields, true
	}
	// A key with escapes or invalid UTF-8: as encoding/json decodes it.
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	fields = fields[:0]
	for k, v := range m {
		fields = append(fields, argField{key: []byte(k), val: v})
	}
	return fields, true
}

// stringOrNull decodes the JSON value v into *s as json.Unmarshal into a
// string does (null leaves it empty); false for any other type.
func stringOrNull(v []byte, s *string) bool {
	if string(v) == "null" {
		return true
	}
	str, ok := jsonString(v)
	*s = str
	return ok
}

// objectMembers calls visit with the key (as written, without its quotes)
// and the raw value of each member of the JSON object b, which must be
// valid JSON, in order. It reports false when b is not an object, a key
// holds an escape or visit returns false.
func objectMembers(b []byte, visit func(key, val []byte) bool) bool {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = skipJSONSpace(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) && b[i] == '"' {
		end := skipJSONString(b, i)
		if end < 0 {
			return false
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		if i = skipJSONSpace(b, end); i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipJSONSpace(b, i+1)
		end = skipJSONValue(b, i)
		if end <= i || !visit(key, b[i:end]) {
			return false
		}
		switch i = skipJSONSpace(b, end); {
		case i < len(b) && b[i] == '}':
			return true
		case i < len(b) && b[i] == ',':
			i = skipJSONSpace(b, i+1)
		default:
			return false
		}
	}
	return false
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipJSONString returns the index just past the string starting at b[i]
// (a quote), or -1 if it does not end.
func skipJSONString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipJSONValue returns the index just past the valid JSON value starting
// at b[i], or -1 if it does not end.
func skipJSONValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end := skipJSONString(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// numbersFitFloat reports whether every number in the valid JSON raw
// decodes into a float64. Only a number with an exponent or hundreds of
// digits can overflow, so the full decode runs only when one is present.
func numbersFitFloat(raw json.RawMessage) bool {
	inString, escaped, risky, run := false, false, false, 0
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString, run = true, 0
		case c == 'e' || c == 'E':
			if run > 0 {
				risky = true
			}
		case c >= '0' && c <= '9' || c == '-' || c == '.' || c == '+':
			run++
			if run > 300 {
				risky = true
			}
		default:
			run = 0
		}
	}
	if !risky {
		return true
	}
	var v any
	return json.Unmarshal(raw, &v) == nil
}
