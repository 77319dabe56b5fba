package web

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// errorBody is the JSON shape of every error answer outside /mcp's
// JSON-RPC guards.
type errorBody struct {
	Error   string         `json:"error"`
	Message string         `json:"message,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// setJSONHeaders sets the headers every JSON answer carries.
func setJSONHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// writeJSON writes v as JSON with the given status. v must be encodable:
// callers that pass values of unknown shape encode them first (see
// writeRawJSON).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own fixed shapes come through here.
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal_error"}`)
	}
	writeRawJSON(w, status, b)
}

// writeRawJSON writes an already encoded JSON document.
func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	setJSONHeaders(w)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes {"error":code,"message":message}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: code, Message: message})
}

// writeDomainError maps err with relay.AsError and HTTPStatus. An
// internal error is logged under op and answered without its text.
func (h *handler) writeDomainError(w http.ResponseWriter, r *http.Request, op string, err error) {
	e := relay.AsError(err)
	if !relay.IsDomain(err) {
		h.log.Error("web: request failed", "op", op, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, HTTPStatus(err), errorBody{Error: e.Code, Message: e.Message, Details: e.Details})
}

// methodNotAllowed answers 405 with an Allow header.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "This method is not allowed here; use "+allow+".")
}

// errTooLarge marks a body over the configured limit.
var errTooLarge = errors.New("request body too large")

// preallocBody is the largest announced body (Content-Length) read into a
// buffer of that size made before it arrives.
const preallocBody = 8 << 10

// readBody reads the request body up to h.maxBody bytes.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > h.maxBody {
		return nil, errTooLarge
	}
	body := http.MaxBytesReader(w, r.Body, h.maxBody)
	var (
		b   []byte
		err error
	)
	if r.ContentLength >= 0 && r.ContentLength <= preallocBody {
		// net/http ends the body after Content-Length bytes: read it into
		// one buffer of that size rather than one grown from 512 bytes.
		b = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, b)
	} else {
		// A larger body grows its buffer as it arrives: a client that only
		// announces a megabyte holds no more memory than it sent.
		b, err = io.ReadAll(body)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errBodyTimeout
		}
		return nil, err
	}
	// The body had until the deadline ServeHTTP set; what runs after it (a
	// waiting claim, net/http's background read) has none. A body that
	// failed keeps it, so the rest of it is not waited for either.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return b, nil
}

// errBodyTimeout marks a body that did not arrive within its read time.
var errBodyTimeout = errors.New("request body too slow")

// minBodyRate is the slowest link a body is waited for: 8 KiB/s (64 kbit/s),
// so the largest allowed body (1 MiB) has about two minutes.
const minBodyRate = 8 << 10

// bodyGrace is added to every body's read time (latency, a slow start).
const bodyGrace = 10 * time.Second

// bodyReadTime is how long a body of n bytes (n < 0: unknown, so the
// largest allowed) may take to arrive: Config.BodyReadTimeout when set,
// else bodyGrace plus n at minBodyRate.
func (h *handler) bodyReadTime(n int64) time.Duration {
	if h.bodyTimeout > 0 {
		return h.bodyTimeout
	}
	if n < 0 || n > h.maxBody {
		n = h.maxBody
	}
	return BodyReadTime(n)
}

// BodyReadTime is how long a body of n bytes is waited for: 10 s plus n at
// 8 KiB/s (about 2 min 18 s for DefaultMaxBodyBytes). The server's
// ReadTimeout uses it for the largest body, as a backstop.
func BodyReadTime(n int64) time.Duration {
	return bodyGrace + time.Duration(n)*time.Second/minBodyRate
}

// limitBodyRead sets the read deadline of a request that has a body: a
// client that sends it slower than the slowest link it is waited for is
// cut off (408) instead of holding its connection. Requests without a
// body (the push stream, the change stream, GETs) get none.
func (h *handler) limitBodyRead(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.bodyReadTime(r.ContentLength)))
}

// writeBodyError answers a readBody failure: 413 for an oversized body, 400
// for a broken one.
func writeBodyError(w http.ResponseWriter, err error) {
	if errors.Is(err, errTooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", "The request body is too large.")
		return
	}
	if errors.Is(err, errBodyTimeout) {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, "request_timeout", "The request body did not arrive in time.")
		return
	}
	writeError(w, http.StatusBadRequest, "bad_request", "The request body could not be read.")
}

// writeInvalidJSON answers a body that is not JSON.
func writeInvalidJSON(w http.ResponseWriter) {
	writeError(w, http.StatusBadRequest, "invalid_json", "The request body is not valid JSON.")
}

// jsonFieldError describes a JSON decoding error of a well-formed document
// as "<field>: <problem>", with prefix naming the root when the field is unknown.
func jsonFieldError(prefix string, err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		field := prefix
		if ute.Field != "" {
			field = ute.Field
			if prefix != "body" {
				field = prefix + "." + ute.Field
			}
		}
		return field + ": must be " + jsonKind(ute.Type.Kind().String()) + " (got " + ute.Value + ")."
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return prefix + ": " + msg + "."
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a different JSON type"
}

// isSecure reports whether the client reached us over HTTPS, directly or
// through a proxy that says so.
func isSecure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// decodeBody reads a JSON object body (an empty one counts as {}) into v.
// On a bad body it writes the error response and returns false.
func (h *handler) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := h.readBody(w, r)
	if err != nil {
		writeBodyError(w, err)
		return false
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		writeInvalidJSON(w)
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, relay.EInvalidRequest, jsonFieldError("body", err))
		return false
	}
	return true
}
