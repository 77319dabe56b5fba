package client

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/crosschat/crosschat-relay/internal/loopback"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ErrNotOurRelay means the program at the relay's address could not prove
// it holds the admin token: it is not this user's relay, and the token was
// not sent.
var ErrNotOurRelay = errors.New("not your Crosschat Relay")

// ErrInsecureURL means the admin token would travel in clear text to
// another computer.
var ErrInsecureURL = errors.New("refusing to send the admin token over plain HTTP to another computer")

// CheckAdminURL accepts the URLs the admin token may be sent to: http to a
// loopback address (localhost, 127.0.0.0/8, ::1), or https to any host.
func CheckAdminURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("relay URL %q: not an absolute http or https URL", base)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback.Host(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%w (%s): over plain HTTP the admin token goes only to this computer; use an https URL for a relay elsewhere", ErrInsecureURL, u.Host)
	}
	return fmt.Errorf("relay URL %q: not an http or https URL", base)
}

// Verify checks, without sending the admin token, that the relay at
// BaseURL holds it: it sends a random challenge to GET /bridge/identity and
// compares the answer with relay.IdentityProof. It also applies
// CheckAdminURL. Call does this once before its first request.
func (c *Client) Verify(ctx context.Context) error {
	c.verifyMu.Lock()
	defer c.verifyMu.Unlock()
	if c.verified {
		return nil
	}
	if err := CheckAdminURL(c.BaseURL); err != nil {
		return err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("identity challenge: %w", err)
	}
	challenge := base64.RawURLEncoding.EncodeToString(raw[:])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/bridge/identity?challenge="+challenge, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if isRefused(err) {
			return fmt.Errorf("%w at %s: %s", ErrNotRunning, c.BaseURL, notRunningHint)
		}
		return fmt.Errorf("reach the relay at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	var out struct {
		Proof string `json:"proof"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil ||
		!hmac.Equal([]byte(out.Proof), []byte(relay.IdentityProof(c.Token, challenge))) {
		return fmt.Errorf("%w: the program at %s could not prove it holds your admin token, so the token was not sent "+
			"(another program may have taken the port, or the relay runs with another data folder or %s)", ErrNotOurRelay, c.BaseURL, "CROSSCHAT_API_TOKEN")
	}
	c.verified = true
	return nil
}

// connRefused reports whether err is a connection refused: nothing
// listens at the address. Windows' WSAECONNREFUSED (10061) is not the
// syscall.ECONNREFUSED Go defines there, so both are looked for.
func connRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.Errno(10061))
}

func isRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
