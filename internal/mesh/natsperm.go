package mesh

import (
	"github.com/nats-io/nats-server/v2/server"
)

// What each relay may do on NATS. The embedded server gives every relay it
// admits exactly these subjects, and `mesh nats-config` prints them for an
// external cluster. Everything not allowed is refused, so a relay can:
//
//   - publish to any relay's inbox (crosschat.mesh.<id>): inboxes are meant
//     to be written, and what arrives is judged by its signature;
//   - write its own directory entries, relay.<own id> and agent.<own id>.…,
//     and read the whole directory (it is public to the mesh);
//   - consume its own subject only, through its own durable consumer
//     relay-<own id> (read its state, pull and acknowledge its messages;
//     on a cluster, create it with its own filter), and publish nothing
//     to its own inbox;
//   - receive replies on its own inbox prefix, _INBOX_<own id>, and nowhere
//     else;
//   - ask the server what it may do ($SYS.REQ.USER.INFO: its own
//     permissions, which the credential check reads);
//
// and nothing more: no stream or bucket deletion, purge or update, no
// message deletion, no direct read of the stream, no deletion of a relay's
// consumer (its own included) for anyone, and no consumer of the
// directory (it is read with direct gets).

// dirStream is the JetStream stream behind the directory bucket.
const dirStream = "KV_" + BucketName

// dirSubjectPrefix is the prefix of the directory's keys as subjects.
const dirSubjectPrefix = "$KV." + BucketName + "."

// userInfoSubject is where a NATS user asks the server for its own
// permissions.
const userInfoSubject = "$SYS.REQ.USER.INFO"

// inboxPrefix is the reply inbox prefix of a relay's connection: no other
// relay may subscribe under it.
func inboxPrefix(relayID string) string { return "_INBOX_" + relayID }

// consumerName is a relay's durable consumer on the mesh stream.
func consumerName(relayID string) string { return "relay-" + relayID }

// grant is what one NATS user may publish and subscribe to.
type grant struct {
	Publish []string `json:"publish"`
	// PublishDeny are subjects of Publish it may not publish to.
	PublishDeny []string `json:"publishDeny,omitempty"`
	Subscribe   []string `json:"subscribe"`
}

// relayGrant is what relay id may do. mayCreate adds creating the stream
// and the directory bucket when they are missing (an external cluster,
// where the first relay sets them up; creating an existing stream changes
// nothing); the embedded server creates them itself.
func relayGrant(id string, mayCreate bool) grant {
	cons := consumerName(id)
	g := grant{
		Publish: []string{
			subjectPrefix + "*",
			dirSubjectPrefix + "relay." + id,
			dirSubjectPrefix + "agent." + id + ".>",
			"$JS.API.STREAM.INFO." + StreamName,
			"$JS.API.STREAM.INFO." + dirStream,
			"$JS.API.CONSUMER.INFO." + StreamName + "." + cons,
			"$JS.API.CONSUMER.MSG.NEXT." + StreamName + "." + cons,
			"$JS.ACK." + StreamName + "." + cons + ".>",
			// Reading the directory: the stream's message API, one entry
			// at a time (dirpoll.go). No consumer and no direct get: both
			// answer with the server's rights to any subject the asker
			// names, a JetStream API subject included.
			"$JS.API.STREAM.MSG.GET." + dirStream,
			// Asking the server what this user may do: the credential
			// check reads it (probe.go).
			userInfoSubject,
		},
		Subscribe: []string{inboxPrefix(id) + ".>"},
	}
	// Not its own inbox: its consumer delivers what is there to the reply
	// subject of its pull, which it names, with the server's rights; an
	// envelope it wrote there as a JetStream request (a consumer's reset)
	// would run as one. Another relay's envelopes there are not requests.
	g.PublishDeny = []string{subject(id)}
	if mayCreate {
		// On a cluster it makes its own consumer (the embedded server
		// makes each relay's, pulled, before letting the relay in: one a
		// relay makes or changes could push to any subject, or expire to
		// be made again pushing).
		g.Publish = append(g.Publish, "$JS.API.STREAM.CREATE."+StreamName, "$JS.API.STREAM.CREATE."+dirStream,
			"$JS.API.CONSUMER.CREATE."+StreamName+"."+cons+"."+subject(id))
	}
	return g
}

// admitSubject is where an invited relay presents its key, once.
func admitSubject(inviteID string) string { return "crosschat.admit." + inviteID }

// inviteGrant is what an invite's user may do: present a key on its own
// admission subject and hear the answer.
func inviteGrant(inviteID string) grant {
	return grant{
		Publish:   []string{admitSubject(inviteID)},
		Subscribe: []string{inboxPrefix("admit_"+inviteID) + ".>"},
	}
}

// permissions is g as the NATS server takes it.
func (g grant) permissions() *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: append([]string(nil), g.Publish...), Deny: append([]string(nil), g.PublishDeny...)},
		Subscribe: &server.SubjectPermission{Allow: append([]string(nil), g.Subscribe...)},
	}
}
