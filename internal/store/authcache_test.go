package store_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// newAgent creates slug with a token and returns the token.
func (e *env) newAgent(slug string) string {
	e.t.Helper()
	_, token, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"code-execution"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return token
}

// authAs fails t unless token authenticates as want.
func (e *env) authAs(token string, want relay.Principal) {
	e.t.Helper()
	if p, err := e.db.Authenticate(e.ctx, token); err != nil || p != want {
		e.t.Fatalf("Authenticate = %+v, %v; want %+v", p, err, want)
	}
}

// exclusiveWorker is an enabled, exclusive worker for coder taking tasks from sender.
func exclusiveWorker(sender string) relay.WorkerConfig {
	c := workerConfig("coder")
	c.AllowedSenders, c.Exclusive = []string{sender}, true
	return c
}

// workerOnly fails t unless WorkerOnly(slug) is want.
func (e *env) workerOnly(slug string, want bool) {
	e.t.Helper()
	if got, err := e.db.WorkerOnly(e.ctx, slug); err != nil || got != want {
		e.t.Fatalf("WorkerOnly(%s) = %v, %v; want %v", slug, got, err, want)
	}
}

// Authenticate and WorkerOnly keep their answers in memory. A change made
// behind the store's back (another program writing the file) is seen at
// the store's next commit, or once a kept answer is authTTL (5 s) old:
// until then the kept answer stands, which shows the database is not read.
func TestAuthAnswersAreKept(t *testing.T) {
	for _, c := range []struct {
		name string
		seen func(e *env) // what makes the store see the change
	}{
		{"at the next commit", func(e *env) {
			if _, err := e.db.Heartbeat(e.ctx, "operator"); err != nil {
				t.Fatal(err)
			}
		}},
		{"when the kept answer expires", func(e *env) { e.clock.Advance(5 * time.Second) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			token := e.newAgent("coder")
			e.saveWorker(exclusiveWorker("operator"))
			coder := relay.Principal{Kind: relay.PrincipalAgent, Slug: "coder"}
			e.authAs(token, coder)
			e.workerOnly("coder", true)

			raw := rawDB(t, e.path)
			if _, err := raw.Exec(`UPDATE agents SET token_hash = NULL WHERE slug = 'coder'`); err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(`UPDATE workers SET exclusive = 0 WHERE agent_slug = 'coder'`); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(4 * time.Second)
			e.authAs(token, coder) // kept: the file was not read
			e.workerOnly("coder", true)

			c.seen(e)
			_, err := e.db.Authenticate(e.ctx, token)
			wantCode(t, err, relay.EUnauthorized)
			e.workerOnly("coder", false)
		})
	}
}

// Every change the store makes to what a token or a worker setting
// resolves to is seen by the very next Authenticate or WorkerOnly, with
// the answer already kept.
func TestAuthAnswersFollowEveryChange(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(e *env, token, run string, task relay.Task)
		token  bool // the agent token still authenticates
		run    bool // the run token still authenticates
		only   bool // WorkerOnly
	}{
		{"nothing", func(e *env, _, _ string, _ relay.Task) {}, true, true, true},
		{"token rotated", func(e *env, _, _ string, _ relay.Task) {
			if _, err := e.db.IssueToken(e.ctx, "coder"); err != nil {
				e.t.Fatal(err)
			}
		}, false, true, true},
		{"token revoked", func(e *env, _, _ string, _ relay.Task) {
			if err := e.db.RevokeToken(e.ctx, "coder"); err != nil {
				e.t.Fatal(err)
			}
		}, false, true, true},
		{"run tokens revoked", func(e *env, _, _ string, task relay.Task) {
			if err := e.db.RevokeRunTokens(e.ctx, task.ID); err != nil {
				e.t.Fatal(err)
			}
		}, true, false, true},
		{"run token expired", func(e *env, _, _ string, _ relay.Task) { e.clock.Advance(61 * time.Second) }, true, false, true},
		{"agent deleted", func(e *env, _, _ string, task relay.Task) {
			if _, err := e.db.CancelTask(e.ctx, "operator", task.ID, "not needed"); err != nil {
				e.t.Fatal(err)
			}
			if err := e.db.DeleteAgent(e.ctx, "coder"); err != nil {
				e.t.Fatal(err)
			}
		}, false, false, false},
		{"worker turned off", func(e *env, _, _ string, _ relay.Task) {
			c := exclusiveWorker("operator")
			c.Enabled = false
			e.saveWorker(c)
		}, true, true, false},
		{"worker deleted", func(e *env, _, _ string, _ relay.Task) {
			if err := e.db.DeleteWorker(e.ctx, "coder"); err != nil {
				e.t.Fatal(err)
			}
		}, true, true, false},
		{"its only sender deleted", func(e *env, _, _ string, _ relay.Task) {
			if err := e.db.DeleteAgent(e.ctx, "boss"); err != nil {
				e.t.Fatal(err)
			}
		}, true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			token := e.newAgent("coder")
			e.newAgent("boss")
			e.saveWorker(exclusiveWorker("boss"))
			task := e.post("operator", "coder", "Run", 0)
			run, err := e.db.IssueRunToken(e.ctx, "coder", task.ID, 60)
			if err != nil {
				t.Fatal(err)
			}
			coder := relay.Principal{Kind: relay.PrincipalAgent, Slug: "coder"}
			running := relay.Principal{Kind: relay.PrincipalAgent, Slug: "coder", RunTaskID: task.ID}
			e.authAs(token, coder)
			e.authAs(run, running)
			e.workerOnly("coder", true)

			c.change(e, token, run, task)
			for _, a := range []struct {
				token string
				want  relay.Principal
				ok    bool
			}{{token, coder, c.token}, {run, running, c.run}} {
				if a.ok {
					e.authAs(a.token, a.want)
				} else {
					_, err := e.db.Authenticate(e.ctx, a.token)
					wantCode(t, err, relay.EUnauthorized)
				}
			}
			e.workerOnly("coder", c.only)
		})
	}
}

// Once RevokeToken has returned, no call is let in on the token, however
// many were authenticating it at that moment.
func TestRevokedTokenRefusedOnceRevokeReturns(t *testing.T) {
	e := newEnv(t, store.Options{})
	for round := range 20 {
		slug := "agent-" + string(rune('a'+round))
		token := e.newAgent(slug)
		var (
			revoked atomic.Bool
			late    atomic.Int64 // calls let in that started after the revoke returned
			wg      sync.WaitGroup
			stop    = make(chan struct{})
		)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := revoked.Load()
					if _, err := e.db.Authenticate(e.ctx, token); err == nil && after {
						late.Add(1)
					}
				}
			}()
		}
		e.authAs(token, relay.Principal{Kind: relay.PrincipalAgent, Slug: slug})
		if err := e.db.RevokeToken(e.ctx, slug); err != nil {
			t.Fatal(err)
		}
		revoked.Store(true)
		_, err := e.db.Authenticate(e.ctx, token)
		wantCode(t, err, relay.EUnauthorized)
		// Let the authenticating goroutines run on a while after the revoke.
		for range 50 {
			if _, err := e.db.Heartbeat(e.ctx, "operator"); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
		if n := late.Load(); n > 0 {
			t.Fatalf("round %d: %d calls authenticated a token after its revoke returned", round, n)
		}
	}
}

// A kept "no worker" is dropped when a worker is added.
func TestKeptNoWorkerFollowsAWorkerAdded(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.newAgent("coder")
	e.workerOnly("coder", false) // kept: no worker
	e.saveWorker(exclusiveWorker("operator"))
	e.workerOnly("coder", true)
}

// A run token valid for less than authTTL is kept no longer than it is valid.
func TestKeptRunTokenExpiresWithTheToken(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.newAgent("coder")
	task := e.post("operator", "coder", "Run", 0)
	run, err := e.db.IssueRunToken(e.ctx, "coder", task.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	e.authAs(run, relay.Principal{Kind: relay.PrincipalAgent, Slug: "coder", RunTaskID: task.ID})
	e.clock.Advance(2 * time.Second)
	_, err = e.db.Authenticate(e.ctx, run)
	wantCode(t, err, relay.EUnauthorized)
}
