package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// WriteFlag prints one flag of a help text as every verb's help writes it:
// "  --name VALUE" (one dash for a one-letter name, as usage lines write
// -f), then its text on the next line, indented, with a default that is not
// the zero value.
func WriteFlag(w io.Writer, f *flag.Flag) {
	value, text := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if len(f.Name) == 1 {
		line = "  -" + f.Name
	}
	if value != "" {
		line += " " + strings.ToUpper(value)
	}
	if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
		text += fmt.Sprintf(" (default %s)", def)
	}
	fmt.Fprintf(w, "%s\n      %s\n", line, text)
}
