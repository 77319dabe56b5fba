package mesh

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// The exact half of the credential check: the relay asks the server what
// its user may publish to ($SYS.REQ.USER.INFO) and matches that against
// the requests that lose what the mesh keeps, naming the mesh's own stream,
// bucket and consumers. The harmless requests of probe.go can only name
// streams and consumers that do not exist, so a credential allowed to
// delete the real ones by name passes them; they remain for a server that
// does not say.

// risk is one thing a credential must not be able to do, as the subjects
// (patterns) through which it could.
type risk struct {
	what     string
	subjects []string
}

// risks are what the check looks for, named as CredentialCheck.Can names
// them. fake is a stream name that does not exist, standing for any
// stream a wildcard grant would reach.
func risks(fake string) []risk {
	api := "$JS.API."
	return []risk{
		{"delete streams", []string{api + "STREAM.DELETE." + StreamName, api + "STREAM.DELETE." + fake}},
		{"purge streams", []string{api + "STREAM.PURGE." + StreamName, api + "STREAM.PURGE." + fake}},
		{"update streams", []string{api + "STREAM.UPDATE." + StreamName, api + "STREAM.UPDATE." + dirStream, api + "STREAM.UPDATE." + fake}},
		{"delete messages", []string{api + "STREAM.MSG.DELETE." + StreamName, api + "STREAM.MSG.DELETE." + dirStream, api + "STREAM.MSG.DELETE." + fake}},
		// Any consumer of the stream: every relay's, its own included.
		{"delete consumers", []string{api + "CONSUMER.DELETE." + StreamName + ".*"}},
		{"delete the directory bucket", []string{api + "STREAM.DELETE." + dirStream, api + "STREAM.PURGE." + dirStream}},
	}
}

// permittedRisks lists what of risks perms let a client do: nil perms
// (no permissions at all) allow everything.
func permittedRisks(perms *server.Permissions, rs []risk) []string {
	var pub *server.SubjectPermission
	if perms != nil {
		pub = perms.Publish
	}
	can := []string{}
	for _, r := range rs {
		if slices.ContainsFunc(r.subjects, func(s string) bool { return mayPublish(pub, s) }) {
			can = append(can, r.what)
		}
	}
	sort.Strings(can)
	return can
}

// mayPublish reports whether p lets a client publish to some subject that
// pattern matches: no deny covers all of pattern, and an allow (or the
// absence of an allow list) reaches part of it.
func mayPublish(p *server.SubjectPermission, pattern string) bool {
	if p == nil {
		return true
	}
	for _, d := range p.Deny {
		if server.SubjectMatchesFilter(pattern, d) {
			return false
		}
	}
	if len(p.Allow) == 0 {
		return true
	}
	return slices.ContainsFunc(p.Allow, func(a string) bool { return server.SubjectsCollide(a, pattern) })
}

// userInfoAnswer is the server's answer to userInfoSubject.
type userInfoAnswer struct {
	Data  *server.UserInfo `json:"data"`
	Error *server.ApiError `json:"error"`
}

// ownPermissions asks the server what this relay's user may do; ok is false
// when the server refused the question, did not answer it in time, or
// answered with an error.
func (n *Node) ownPermissions(ctx context.Context) (perms *server.Permissions, ok bool) {
	denied, stop := n.watchDenied(userInfoSubject)
	defer stop()
	rctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	type result struct {
		data []byte
		err  error
	}
	answered := make(chan result, 1)
	go func() {
		m, err := n.nc.RequestWithContext(rctx, userInfoSubject, nil)
		if err != nil {
			answered <- result{err: err}
			return
		}
		answered <- result{data: m.Data}
	}()
	select {
	case <-denied:
		return nil, false
	case r := <-answered:
		var a userInfoAnswer
		if r.err != nil || json.Unmarshal(r.data, &a) != nil || a.Error != nil || a.Data == nil || strings.TrimSpace(a.Data.Account) == "" {
			return nil, false
		}
		return a.Data.Permissions, true
	}
}
