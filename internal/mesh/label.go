package mesh

import (
	"sync"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// relayName is a relay name's compared form and label (relay.RelayName)
// after NFKC_Casefold, which the domain cannot compute without Unicode's
// tables: the mesh, which takes names from other computers, folds them.
// Results are kept (at most maxNameForms names, then forgotten together):
// labels are judged for every envelope applied.
func relayName(name string) relay.RelayNameForm {
	nameForms.Lock()
	defer nameForms.Unlock()
	if f, ok := nameForms.m[name]; ok {
		return f
	}
	if len(nameForms.m) >= maxNameForms {
		clear(nameForms.m)
	}
	f := relay.RelayName(foldName(name))
	nameForms.m[name] = f
	return f
}

const maxNameForms = 4096

var nameForms = struct {
	sync.Mutex
	m map[string]relay.RelayNameForm
}{m: map[string]relay.RelayNameForm{}}

// foldName is name in Unicode NFKC with its case folded, applied until it
// no longer changes (case folding can undo a composition; two rounds
// settle every name, four bound it).
func foldName(name string) string {
	s := name
	for range 4 {
		next := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
		if next == s {
			break
		}
		s = next
	}
	return s
}
