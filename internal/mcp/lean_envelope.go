package mcp

// The lean path's JSON envelope scanner (lean.go): it checks a tools/call
// body's keys and numbers without decoding it.

import (
	"bytes"
	"encoding/json"
)

// envelopeKeysOnly reports whether the valid JSON body is an object whose
// keys are only jsonrpc, id, method and params, and whose params, when an
// object, has only name and arguments: each spelled exactly, without
// escapes.
func envelopeKeysOnly(body []byte) bool {
	return objectMembers(body, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc", "id", "method":
			return true
		case "params":
			if val[0] != '{' {
				return true // null: no params; anything else json.Unmarshal refused
			}
			return objectMembers(val, func(key, _ []byte) bool {
				return string(key) == "name" || string(key) == "arguments"
			})
		}
		return false
	})
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
