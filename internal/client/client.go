// Package client calls a running relay's bridge over HTTP with the admin
// token: the CLI verbs use it so they never open the database file of a
// relay that is running.
//
// It imports only the standard library and internal/relay.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Client talks to one relay.
type Client struct {
	// BaseURL is e.g. http://127.0.0.1:4318.
	BaseURL string
	// Token is the admin token.
	Token string
	// HTTP defaults to a client with a 30 s timeout.
	HTTP *http.Client

	verifyMu sync.Mutex
	verified bool
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// New returns a client for baseURL with the admin token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// ErrNotRunning means nothing answered at the relay's address.
var ErrNotRunning = errors.New("relay is not running")

// Call invokes Service.Method on the bridge with args and decodes the result
// into out (which may be nil). Refusals come back as *relay.Error. The
// first call verifies the relay (see Verify) before the token is sent.
func (c *Client) Call(ctx context.Context, service, method string, out any, args ...any) error {
	if err := c.Verify(ctx); err != nil {
		return err
	}
	if args == nil {
		args = []any{}
	}
	body, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encode arguments: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/bridge/"+service+"."+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w at %s: start it with `crosschat-relay` or `crosschat-relay serve`, or pass --port/--host", ErrNotRunning, c.BaseURL)
		}
		return fmt.Errorf("call %s.%s: %w", service, method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read %s.%s response: %w", service, method, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e relay.Error
		if json.Unmarshal(data, &e) == nil && e.Code != "" {
			if e.Code == relay.EUnauthorized {
				e.Message += " (the admin token comes from CROSSCHAT_API_TOKEN or the api-token file in --data-dir)"
			}
			return &e
		}
		return fmt.Errorf("call %s.%s: HTTP %d: %s", service, method, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode %s.%s response: %w", service, method, err)
	}
	return nil
}
