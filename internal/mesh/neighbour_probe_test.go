package mesh

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/store"
)

// withPublish is u with more subjects it may publish to, as an operator
// who edits the users `mesh nats-config` printed might give it.
func withPublish(u NATSUser, subjects ...string) NATSUser {
	u.Publish = append(slices.Clone(u.Publish), subjects...)
	u.Config = fmt.Sprintf("{nkey: %q, permissions: {publish: {allow: %s}, subscribe: {allow: %s}}}", u.NKey, confList(u.Publish), confList(u.Subscribe))
	return u
}

// Ensure the credential check is honest about the mesh's own stream,
// consumers and bucket: a credential allowed to delete or update them by
// name (and nothing else beyond a relay's own subjects) is reported, and
// refused in strict mode, though every harmless request of the check
// (which names streams and consumers that do not exist) is refused it.
// Before, such a relay joined in strict mode as confined, and its
// credential then deleted the stream.
func TestCredentialCheckSeesGrantsByName(t *testing.T) {
	other := identity(t, t.TempDir(), "relay-b")
	for _, tc := range []struct {
		name  string
		grant []string
		can   []string
	}{
		{"delete the stream", []string{"$JS.API.STREAM.DELETE." + StreamName}, []string{"delete streams"}},
		{"delete the directory", []string{"$JS.API.STREAM.DELETE." + dirStream}, []string{"delete the directory bucket"}},
		{"delete another relay's consumer", []string{"$JS.API.CONSUMER.DELETE." + StreamName + "." + consumerName(other.ID)}, []string{"delete consumers"}},
		{"update the stream", []string{"$JS.API.STREAM.UPDATE." + StreamName}, []string{"update streams"}},
		{"all of the mesh's stream", []string{"$JS.API.STREAM.*." + StreamName, "$JS.API.STREAM.MSG.DELETE." + StreamName},
			[]string{"delete messages", "delete streams", "purge streams", "update streams"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			self := identity(t, dir, "relay-a")
			users := []NATSUser{withPublish(natsUser(self.ID, self.Name, self.PublicKey, true), tc.grant...), natsUser(other.ID, other.Name, other.PublicKey, false)}
			url := configuredServerWith(t, self, users)

			db, err := store.Open(filepath.Join(dir, "relay.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := Start(Options{URLs: []string{url}, DataDir: dir, Name: "relay-a", Store: db.Mesh(), Strict: true})
			if err == nil {
				c := n.Credential()
				n.Close()
				db.Close()
				t.Fatalf("strict mode joined with a credential that may %v; its check found %+v", tc.can, c)
			}
			db.Close()
			if !strings.Contains(err.Error(), strings.Join(tc.can, ", ")) {
				t.Fatalf("strict refusal = %v; want it to say the credential can %s", err, strings.Join(tc.can, ", "))
			}
			a := startRelay(t, "relay-a", dir, url)
			if c := a.node.Credential(); !slices.Equal(c.Can, tc.can) {
				t.Fatalf("credential check = %+v; want it to find %v", c, tc.can)
			}
		})
	}
}

// Ensure a credential the server does not say the permissions of (a user
// made without $SYS.REQ.USER.INFO) is checked with the harmless requests
// only, says so (listed false), and is refused in strict mode, which
// cannot confirm it safe by name.
func TestCredentialCheckWithoutUserInfo(t *testing.T) {
	dir := t.TempDir()
	self := identity(t, dir, "relay-a")
	u := natsUser(self.ID, self.Name, self.PublicKey, true)
	u = withPublish(u)
	u.Publish = slices.DeleteFunc(u.Publish, func(s string) bool { return s == userInfoSubject })
	u = withPublish(u)
	url := configuredServerWith(t, self, []NATSUser{u})

	db, err := store.Open(filepath.Join(dir, "relay.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Start(Options{URLs: []string{url}, DataDir: dir, Name: "relay-a", Store: db.Mesh(), Strict: true})
	if err == nil {
		n.Close()
		db.Close()
		t.Fatal("strict mode joined though the server did not say what the credential may do")
	}
	db.Close()
	if !strings.Contains(err.Error(), userInfoSubject) {
		t.Fatalf("strict refusal = %v; want it to name %s", err, userInfoSubject)
	}
	a := startRelay(t, "relay-a", dir, url)
	if c := a.node.Credential(); !c.Checked || c.Listed || len(c.Can) != 0 || len(c.Unknown) != 0 {
		t.Fatalf("credential check = %+v; want checked by the harmless requests only, finding nothing", c)
	}
}
