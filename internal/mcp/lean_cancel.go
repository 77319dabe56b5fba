package mcp

// Cancel tracking for the lean path (lean.go): the calls in flight, ended
// by notifications/cancelled.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// cancelKey names a call for notifications/cancelled: the caller and the
// request id as mcp-go prints it. Calls of one caller only can be ended.
func cancelKey(ctx context.Context, id any) string {
	p, _ := relay.PrincipalFrom(ctx)
	var ids string
	switch v := id.(type) {
	case string:
		ids = v
	case float64:
		ids = strconv.FormatFloat(v, 'g', -1, 64) // as %v writes it
	default:
		ids = fmt.Sprint(v)
	}
	return string(p.Kind) + "\x00" + p.Slug + "\x00" + p.RunTaskID + "\x00" + ids
}

// track registers a running call under key; the returned func removes it.
func (h *leanHandler) track(key string, cancel context.CancelFunc) func() {
	c := &leanInflight{cancel: cancel}
	h.mu.Lock()
	h.inflight[key] = append(h.inflight[key], c)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		list := h.inflight[key]
		for i, x := range list {
			if x == c {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(h.inflight, key)
		} else {
			h.inflight[key] = list
		}
	}
}

// noteCancel ends the caller's lean calls named by a notifications/cancelled
// body; mcp-go then answers the notification (and ends its own calls).
func (h *leanHandler) noteCancel(r *http.Request, body []byte) {
	if !bytes.Contains(body, []byte(mcp.MethodNotificationCancelled)) {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &n) != nil || n.Method != string(mcp.MethodNotificationCancelled) || n.Params.RequestID == nil {
		return
	}
	key := cancelKey(r.Context(), n.Params.RequestID)
	h.mu.Lock()
	list := append([]*leanInflight(nil), h.inflight[key]...)
	h.mu.Unlock()
	for _, c := range list {
		c.cancel()
	}
}
