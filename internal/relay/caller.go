package relay

import "context"

type callerGoneKey struct{}

// WithCallerCheck returns ctx carrying gone, which reports whether the
// caller of a request has gone (closed its connection) although the
// request's context did not end: the HTTP layer sets it per connection,
// since net/http stops watching a connection for its close once the
// caller has sent a byte of a next request (HTTP/1 pipelining).
func WithCallerCheck(ctx context.Context, gone func() bool) context.Context {
	return context.WithValue(ctx, callerGoneKey{}, gone)
}

// CallerGone reports whether the caller of ctx's request has gone: its
// context ended, or the check WithCallerCheck set says so. A task about
// to be answered to such a caller (a waiting claim) goes back to the
// queue instead.
func CallerGone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	gone, _ := ctx.Value(callerGoneKey{}).(func() bool)
	return gone != nil && gone()
}
