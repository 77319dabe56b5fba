//go:build !unix

package plantguard

import "errors"

func syscallMkfifo(string) error { return errors.New("no FIFOs") }
