package mesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// CredentialCheck is what this relay's NATS credential was found to allow
// beyond a relay's own subjects. A relay checks it when it joins: a
// credential that can delete or purge what the mesh keeps lets whoever
// holds it (any relay given the same credential, anyone who copies it)
// lose every relay's messages.
type CredentialCheck struct {
	// Checked is false until NATS answered the check.
	Checked bool `json:"checked"`
	// Can lists what the credential may do that no relay needs: "delete
	// streams", "purge streams", "update streams", "delete messages",
	// "delete consumers", "delete the directory bucket".
	Can []string `json:"can,omitempty"`
	// Unknown lists what NATS neither answered nor refused in time.
	Unknown []string `json:"unknown,omitempty"`
	// Listed is true when the server said what the credential may do
	// ($SYS.REQ.USER.INFO) and the check read that; false when it could
	// only send harmless requests, which name no real stream or consumer
	// and so miss a grant of the real ones by name.
	Listed bool `json:"listed"`
}

// Confined reports whether the check found nothing the credential should
// not be able to do.
func (c CredentialCheck) Confined() bool { return c.Checked && len(c.Can) == 0 && len(c.Unknown) == 0 }

// probe is one harmless request: against a name that does not exist (a
// credential allowed to make it gets "not found", one that is not gets a
// permissions violation), or a purge of a subject with no messages.
type probe struct {
	what, subject string
	body          []byte
}

// probeSuffix is a fresh random name part for the names a check makes up.
func probeSuffix() string {
	raw := make([]byte, 6)
	_, _ = rand.Read(raw) // crypto/rand does not fail; a zero name is still unused
	return hex.EncodeToString(raw)
}

// probeStream is the made-up stream name of a check with suffix x.
func probeStream(x string) string { return "CROSSCHAT_PROBE_" + strings.ToUpper(x) }

// probes are the requests of a check, with fresh names.
func probes() []probe {
	x := probeSuffix()
	fake := probeStream(x)
	return []probe{
		{"delete streams", "$JS.API.STREAM.DELETE." + fake, nil},
		{"purge streams", "$JS.API.STREAM.PURGE." + fake, nil},
		{"purge streams", "$JS.API.STREAM.PURGE." + StreamName, []byte(`{"filter":"crosschat.probe.` + x + `"}`)},
		{"update streams", "$JS.API.STREAM.UPDATE." + fake, []byte(`{"name":"` + fake + `","subjects":["crosschat.probe.` + x + `"]}`)},
		{"delete messages", "$JS.API.STREAM.MSG.DELETE." + fake, []byte(`{"seq":1}`)},
		{"delete consumers", "$JS.API.CONSUMER.DELETE." + StreamName + ".probe-" + x, nil},
		{"delete the directory bucket", "$JS.API.STREAM.DELETE.KV_crosschat_probe_" + x, nil},
	}
}

// probeTimeout is how long one probe waits for an answer or a refusal.
const probeTimeout = 3 * time.Second

// checkCredential reads what the server says the relay's user may do,
// and else runs the probes on the relay's connection.
func (n *Node) checkCredential(ctx context.Context) CredentialCheck {
	if perms, ok := n.ownPermissions(ctx); ok {
		return CredentialCheck{Checked: true, Listed: true, Can: permittedRisks(perms, risks(probeStream(probeSuffix())))}
	}
	ps := probes()
	type outcome struct {
		what           string
		allowed, known bool
	}
	out := make(chan outcome, len(ps))
	for _, p := range ps {
		denied, stop := n.watchDenied(p.subject)
		go func() {
			defer stop()
			rctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			answered := make(chan error, 1)
			go func() {
				_, err := n.nc.RequestWithContext(rctx, p.subject, p.body)
				answered <- err
			}()
			select {
			case err := <-answered:
				select {
				case <-denied:
					out <- outcome{what: p.what, known: true}
				default:
					// An answer, even "not found", means NATS let the request through.
					out <- outcome{what: p.what, allowed: err == nil, known: err == nil}
				}
			case <-denied:
				out <- outcome{what: p.what, known: true}
			}
		}()
	}
	c := CredentialCheck{Checked: true}
	seen := map[string]bool{}
	unknown := map[string]bool{}
	for range ps {
		o := <-out
		switch {
		case o.allowed && !seen[o.what]:
			seen[o.what] = true
			c.Can = append(c.Can, o.what)
		case !o.known:
			unknown[o.what] = true
		}
	}
	for what := range unknown {
		if !seen[what] {
			c.Unknown = append(c.Unknown, what)
		}
	}
	sort.Strings(c.Can)
	sort.Strings(c.Unknown)
	return c
}

// deniedRe finds the subject of a publish permissions violation.
var deniedRe = regexp.MustCompile(`Publish to "([^"]+)"`)

// watchDenied returns a channel closed when NATS refuses a publish to
// subject, and the function that stops watching.
func (n *Node) watchDenied(subject string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	n.deniedMu.Lock()
	if n.denied == nil {
		n.denied = map[string]chan struct{}{}
	}
	n.denied[subject] = ch
	n.deniedMu.Unlock()
	return ch, func() {
		n.deniedMu.Lock()
		if n.denied[subject] == ch {
			delete(n.denied, subject)
		}
		n.deniedMu.Unlock()
	}
}

// asyncError handles an error NATS reports apart from a call: a server
// that stops admitting this relay is said in the status; a refused
// publish or subscription is logged once per subject (a relay's own
// subjects are never refused by a configuration `mesh nats-config` made).
func (n *Node) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		n.waitingForNATS(err) // a server that no longer admits this relay
		return
	}
	if !errors.Is(err, nats.ErrPermissionViolation) {
		if n.ctx == nil || n.ctx.Err() == nil {
			n.log.Debug("mesh: NATS", "err", err)
		}
		return
	}
	subj := ""
	if m := deniedRe.FindStringSubmatch(err.Error()); m != nil {
		subj = m[1]
	}
	n.deniedMu.Lock()
	ch, waited := n.denied[subj]
	if waited {
		delete(n.denied, subj)
		close(ch)
	}
	first := !n.deniedSeen[err.Error()] && len(n.deniedSeen) < 100
	if first {
		if n.deniedSeen == nil {
			n.deniedSeen = map[string]bool{}
		}
		n.deniedSeen[err.Error()] = true
	}
	n.deniedMu.Unlock()
	switch {
	case waited || !first || n.ctx != nil && n.ctx.Err() != nil:
	default:
		n.log.Warn("mesh: NATS refused this relay a subject", "err", err)
	}
}

// strictRefusal is the error of a strict start with credential c, nil
// when c is confined.
func strictRefusal(c CredentialCheck) error {
	switch {
	case len(c.Can) > 0:
		return fmt.Errorf("mesh: strict mode (--nats-strict): this relay's NATS credential can %s, so anyone holding it can destroy what the mesh keeps; "+
			"give each relay its own user (`crosschat-relay mesh nats-config` prints them) or start without --nats-strict", strings.Join(c.Can, ", "))
	case len(c.Unknown) > 0:
		return fmt.Errorf("mesh: strict mode (--nats-strict): NATS neither allowed nor refused this relay's credential to %s in time, so it cannot be confirmed safe",
			strings.Join(c.Unknown, ", "))
	case !c.Listed:
		return fmt.Errorf("mesh: strict mode (--nats-strict): the NATS server did not say what this relay's credential may do (%s), "+
			"so whether it may delete the mesh's stream, consumers or directory by name cannot be confirmed; "+
			"let it ask (the users `crosschat-relay mesh nats-config` prints may) or start without --nats-strict", userInfoSubject)
	}
	return nil
}
