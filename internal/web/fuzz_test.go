package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// inviteMarker in a FuzzEnroll input is replaced by a valid invite code, so
// the fuzzer reaches enrollment itself and not only validation.
const inviteMarker = "$INVITE"

// FuzzEnroll ensures no enrollment body makes the handler panic or answer
// anything but 201 or a JSON error with a code.
func FuzzEnroll(f *testing.F) {
	db := openStore(f, nil)
	h := newHandler(f, db, envOptions{maxBody: 8 << 10, rateLimit: noRateLimit})
	_, code := createInvite(f, db, relay.InviteInput{ExpiresInHours: 24})
	for _, seed := range []string{
		enrollBody(inviteMarker, "fuzz-seed"),
		enrollBody("cci_wrong", "fuzz-seed"),
		`{"invite":"$INVITE","slug":"a","displayName":"","modelSlug":"m","capabilities":[]}`,
		`{"invite":"$INVITE","slug":"operator","displayName":"x","modelSlug":"m","capabilities":["a"],"details":"d"}`,
		`{"invite":1}`, `[]`, `null`, ``, `{`, `"\u0000"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = bytes.ReplaceAll(body, []byte(inviteMarker), []byte(code))
		r := httptest.NewRequest(http.MethodPost, "http://localhost/api/enroll", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusCreated:
			var resp struct {
				Token  string `json:"token"`
				MCPURL string `json:"mcpUrl"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Token == "" || resp.MCPURL != "http://localhost/mcp" {
				t.Fatalf("201 body = %s (%v)", w.Body, err)
			}
		case http.StatusBadRequest, http.StatusForbidden, http.StatusConflict, http.StatusRequestEntityTooLarge:
			checkErrorBody(t, w)
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}

// FuzzBridgeArgs ensures no argument array makes a bridge call panic or
// answer anything but 200 or a 4xx JSON error.
func FuzzBridgeArgs(f *testing.F) {
	db := openStore(f, nil)
	h := newHandler(f, db, envOptions{maxBody: 8 << 10})
	methods := []string{"Echo", "Sum", "Nothing", "Check", "Validate", "Agent"}
	for _, seed := range []struct {
		method uint8
		body   string
	}{
		{0, `[2,"ab"]`}, {0, `[3]`}, {1, `[1,2]`}, {1, `[1,2,3]`}, {1, `[1,"x"]`}, {2, `[]`}, {3, `[true]`},
		{4, `[{"slug":"ok-slug","displayName":"D","modelSlug":"m","capabilities":["a"]}]`}, {4, `[{"capabilities":"a"}]`},
		{5, `["nobody"]`}, {5, `["operator"]`}, {6, `["x"]`}, {1, `{}`}, {1, `[`}, {1, ``}, {1, `null`}, {0, `[1e400,""]`}, {0, `[-1]`},
	} {
		f.Add(seed.method, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method uint8, body []byte) {
		target := "Tests." + methods[int(method)%len(methods)]
		r := httptest.NewRequest(http.MethodPost, "http://localhost/bridge/"+target, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+adminToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusOK:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("200 body is not JSON: %s", w.Body)
			}
		case w.Code >= 400 && w.Code < 500:
			checkErrorBody(t, w)
		default:
			t.Fatalf("%s: status %d for %q: %s", target, w.Code, body, w.Body)
		}
	})
}

// checkErrorBody checks that an error answer is JSON with an error code.
func checkErrorBody(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
		t.Fatalf("status %d body is not a JSON error: %s (%v)", w.Code, w.Body, err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("content-type = %q", ct)
	}
}
