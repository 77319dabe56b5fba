package config

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The flag package's words for a flag it does not know and a value it
// cannot read.
var (
	unknownFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	badValue    = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
)

// FlagError is err (from fs.Parse) with each flag spelt as it is typed
// (--name; -f for a one-letter flag, as the help shows them), and a
// duration that does not read said what reads: the flag package wrote
// "flag provided but not defined: -frob" and, for --expires 2d,
// "invalid value "2d" for flag -expires: parse error".
func FlagError(fs *flag.FlagSet, err error) error {
	typed := func(name string) string {
		if len(name) == 1 {
			return "-" + name
		}
		return "--" + name
	}
	msg := err.Error()
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag %s", typed(m[1]))
	}
	if m := badValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case time.Duration:
					return fmt.Errorf("%s %q is not a duration: give hours, minutes or seconds, such as 90m, 24h or 168h", typed(m[2]), m[1])
				case int, int64, uint, uint64:
					if strings.HasSuffix(m[3], "out of range") {
						return fmt.Errorf("%s %q is out of range", typed(m[2]), m[1])
					}
					return fmt.Errorf("%s %q is not a whole number", typed(m[2]), m[1])
				}
			}
		}
		return fmt.Errorf("%s %q: %s", typed(m[2]), m[1], m[3])
	}
	return err
}
