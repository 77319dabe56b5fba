package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// The JSON editing of tools' settings files: members keep their order, and
// a file that is not plain JSON is left alone.

// jkv is one member of an ordered JSON object.
type jkv struct {
	Key string
	Val any
}

// jobj is a JSON object that keeps its members' order.
type jobj []jkv

func obj1(k string, v any) jobj { return jobj{{k, v}} }

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func snippet(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v, "")
	return b.String()
}

// editJSON sets path in the JSON object of file to val, keeping every other
// member and their order.
func editJSON(tool, file string, path []string, val jobj) (Connection, error) {
	wanted := any(val)
	for i := len(path) - 1; i >= 0; i-- {
		wanted = jobj{{path[i], wanted}}
	}
	manual := Connection{File: file, Snippet: snippet(wanted),
		Message: fmt.Sprintf("%s isn't plain JSON that can be edited safely (it may have comments), so it was left unchanged: add this to it yourself.", file)}
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Connection{}, fmt.Errorf("connect %s: %w", tool, err)
	}
	root, ok := parseObject(old)
	if !ok {
		return manual, nil
	}
	root, err = setPath(root, path, val)
	if err != nil {
		return manual, nil
	}
	if err := writeSettings(file, old, settingsFile(root)); err != nil {
		return Connection{}, fmt.Errorf("connect %s: %w", tool, err)
	}
	return Connection{Configured: true, File: file,
		Message: fmt.Sprintf(`%s now has the MCP server "crosschat" (%s).`, tool, file)}, nil
}

func setPath(o jobj, path []string, val any) (jobj, error) {
	for i := range o {
		if o[i].Key != path[0] {
			continue
		}
		if len(path) == 1 {
			o[i].Val = val
			return o, nil
		}
		child, ok := o[i].Val.(jobj)
		if !ok {
			return nil, fmt.Errorf("%s is not an object: %w", path[0], errUnsafe)
		}
		child, err := setPath(child, path[1:], val)
		if err != nil {
			return nil, err
		}
		o[i].Val = child
		return o, nil
	}
	if len(path) == 1 {
		return append(o, jkv{path[0], val}), nil
	}
	child, err := setPath(jobj{}, path[1:], val)
	if err != nil {
		return nil, err
	}
	return append(o, jkv{path[0], child}), nil
}

// parseObject reads b, a settings file, as the JSON object an edit starts
// from: one of only white space is an empty object; ok is false for one
// that is not a JSON object.
func parseObject(b []byte) (o jobj, ok bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return jobj{}, true
	}
	v, err := parseJSON(b)
	o, ok = v.(jobj)
	return o, ok && err == nil
}

// parseJSON decodes one JSON value, objects as jobj and numbers as
// json.Number. A key repeated in an object keeps its first place and its
// last value, as the CLIs' own readers (JavaScript's JSON.parse, Go's
// encoding/json) take it: an edit then changes the member they read.
func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value: %w", errUnsafe)
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := jobj{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			if i := slices.IndexFunc(o, func(m jkv) bool { return m.Key == k }); i >= 0 {
				o[i].Val = v
				continue
			}
			o = append(o, jkv{k, v})
		}
		_, err := dec.Token()
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v: %w", d, errUnsafe)
}

// settingsFile is v as a settings file's bytes: indented JSON and a final
// line break.
func settingsFile(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v, "")
	b.WriteByte('\n')
	return b.Bytes()
}

// writeJSON writes v indented by two spaces.
func writeJSON(b *bytes.Buffer, v any, indent string) {
	switch t := v.(type) {
	case jobj:
		writeBlock(b, '{', '}', len(t), indent, func(i int) {
			writeScalar(b, t[i].Key)
			b.WriteString(": ")
			writeJSON(b, t[i].Val, indent+"  ")
		})
	case []any:
		writeBlock(b, '[', ']', len(t), indent, func(i int) {
			writeJSON(b, t[i], indent+"  ")
		})
	default:
		writeScalar(b, t)
	}
}

// writeBlock writes an object or array of n members between open and
// close, one a line indented under indent; item writes member i. An empty
// one stays on one line.
func writeBlock(b *bytes.Buffer, open, close byte, n int, indent string, item func(i int)) {
	b.WriteByte(open)
	if n > 0 {
		b.WriteByte('\n')
		for i := range n {
			b.WriteString(indent + "  ")
			item(i)
			if i < n-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent)
	}
	b.WriteByte(close)
}

func writeScalar(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, numbers, booleans and null always encode
	b.Truncate(b.Len() - 1)
}
