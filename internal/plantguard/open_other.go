//go:build !unix

package plantguard

// Flags of every open: none needed where there are no FIFOs to wait on.
const (
	openNonBlock  = 0
	openDirectory = 0
)
