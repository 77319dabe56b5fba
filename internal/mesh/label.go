package mesh

import (
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// relayName is a relay name's compared form and label (relay.RelayName)
// after NFKC_Casefold, which the domain cannot compute without Unicode's
// tables: the mesh, which takes names from other computers, folds them.
func relayName(name string) relay.RelayNameForm {
	return relay.RelayName(foldName(name))
}

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
