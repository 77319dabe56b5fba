package mesh

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// More of what a hostile neighbour may try, each held: the corners of the
// JetStream API and the system subjects a relay's user is or is not let
// through, and an invite used twice at once.

// Ensure a relay's own user reaches nothing of another relay through the
// JetStream API's corners and the system subjects: NATS refuses what is
// not its own, and what it lets through answers nothing of another relay.
func TestNeighbourAPICorners(t *testing.T) {
	a, b, c := threeRelays(t, nil)
	roundTrip(t, a, b, "before")
	bID := b.node.id.ID
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	for _, p := range []struct{ name, subject, body string }{
		{"list the streams", "$JS.API.STREAM.LIST", ""},
		{"name the streams", "$JS.API.STREAM.NAMES", ""},
		{"read the account", "$JS.API.INFO", ""},
		{"name the stream's consumers", "$JS.API.CONSUMER.NAMES." + StreamName, ""},
		{"the server's connections", "$SYS.REQ.SERVER.PING.CONNZ", ""},
		{"the account's connections", "$SYS.REQ.ACCOUNT.PING.CONNZ", ""},
		{"the account's statistics", "$SYS.REQ.ACCOUNT.PING.STATZ", ""},
		{"another user's details", "$SYS.REQ.USER." + bID + ".INFO", ""},
		{"an invite's admission subject", admitSubject("0123456789abcdef"), "{}"},
		{"B's replies", inboxPrefix(bID) + ".x.y", ""},
		{"the plain reply prefix", "_INBOX.x.y", ""},
		{"the stream's flow control of B's consumer", "$JS.FC." + StreamName + "." + consumerName(bID) + ".x", ""},
		{"a consumer of the stream made through the directory's subject", "$JS.API.CONSUMER.CREATE." + dirStream + ".spy",
			`{"stream_name":"` + StreamName + `","config":{"name":"spy","filter_subject":"` + subject(bID) + `"}}`},
	} {
		t.Run(p.name, func(t *testing.T) { h.publishRefused(t, p.subject, nil, []byte(p.body)) })
	}

	for _, p := range []struct {
		name, subject, body string
		held                func(*nats.Msg) bool
	}{
		// It asks the server what it may do, and learns only its own.
		{"its own permissions", userInfoSubject, "", func(m *nats.Msg) bool {
			return strings.Contains(string(m.Data), `"user":"`+c.node.id.NKey()+`"`)
		}},
		{"B's inbox read through the directory", "$JS.API.STREAM.MSG.GET." + dirStream, `{"last_by_subj":"` + subject(bID) + `"}`,
			func(m *nats.Msg) bool { return strings.Contains(string(m.Data), `"code":404`) }},
	} {
		t.Run(p.name, func(t *testing.T) {
			if m := h.request(t, p.subject, nil, []byte(p.body)); !p.held(m) {
				t.Fatalf("%s = %s %v", p.subject, m.Data, m.Header)
			}
		})
	}
	roundTrip(t, a, b, "after")
}

// Ensure two relays presenting one invite at the same moment get one
// admission between them, and the invite is spent.
func TestInviteRacedByTwoRelays(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	u, err := a.node.Invite()
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := splitURLs([]string{u.URL})
	// Both connect first, then both ask at once: the admission reloads the
	// server's users, and nats-server (v2.15.3 too) reads a connecting
	// client's CONNECT options without its lock during a reload (auth.go
	// processClientOrLeafAuthentication vs client.go registerUser), a data
	// race -race reports. nats.Connect returns after the server's PONG, so
	// once it has, that client's CONNECT is done. The admissions still race.
	var connected sync.WaitGroup
	connected.Add(2)
	present := func(who Identity) admitAnswer {
		nc, err := nats.Connect(a.node.ClientURL(), nats.UserInfo(inviteUser(tok.id), tok.secret), nats.CustomInboxPrefix(inboxPrefix("admit_"+tok.id)), nats.Timeout(30*time.Second))
		connected.Done()
		if err != nil {
			return admitAnswer{Error: err.Error()}
		}
		defer nc.Close()
		connected.Wait()
		sig, _ := who.signNonce(admitSigned(tok.id, who.ID, who.NKey()))
		body, _ := json.Marshal(admitRequest{Secret: tok.secret, RelayID: who.ID, Name: who.Name, NKey: who.NKey(), Sig: base64.StdEncoding.EncodeToString(sig)})
		m, err := nc.Request(admitSubject(tok.id), body, 30*time.Second)
		if err != nil {
			return admitAnswer{Error: err.Error()}
		}
		var ans admitAnswer
		_ = json.Unmarshal(m.Data, &ans)
		return ans
	}
	ids := []Identity{identity(t, t.TempDir(), "one"), identity(t, t.TempDir(), "two")}
	answers := make([]admitAnswer, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = present(id)
		}()
	}
	wg.Wait()
	admitted := 0
	for _, ans := range answers {
		if ans.Admitted {
			admitted++
		}
	}
	if admitted != 1 {
		t.Fatalf("answers %+v; want exactly one admission", answers)
	}
	a.node.adm.mu.Lock()
	members, open := len(a.node.adm.st.Members), len(a.node.adm.st.Invites)
	a.node.adm.mu.Unlock()
	if members != 1 || open != 0 {
		t.Fatalf("%d relays admitted, %d invites open; want 1 and 0", members, open)
	}
}
