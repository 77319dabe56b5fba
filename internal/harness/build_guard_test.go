package harness_test

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a prompt too long for the system's command line (Windows: 32,767
// characters in all; Linux: 128 KiB per argument) reaches a custom program
// through its file and standard input instead of a command the system
// would refuse, while a short one stays the last argument.
func TestPromptPastCommandLineLimitGoesThroughFileAndStdin(t *testing.T) {
	for _, tc := range []struct {
		goos   string
		prompt string
		moved  bool
	}{
		{"windows", strings.Repeat("é", 33000), true},
		{"windows", strings.Repeat("x", 1000), false},
		{"linux", strings.Repeat("x", 40000), false},
		{"linux", strings.Repeat("文", 50000), true},
	} {
		req := request(tc.goos, harness.Custom, false, false)
		req.Config.PromptMode = relay.PromptArgument
		req.Config.Args = []string{"--yolo"}
		req.Prompt = tc.prompt
		spec, err := harness.Build(req, tc.goos)
		if err != nil {
			t.Fatal(err)
		}
		last := spec.Args[len(spec.Args)-1]
		if !tc.moved {
			if last != tc.prompt || spec.Stdin != "" {
				t.Errorf("%s, %d bytes: the prompt should stay the last argument", tc.goos, len(tc.prompt))
			}
			continue
		}
		if spec.Stdin != tc.prompt || !strings.Contains(last, req.PromptFile) || len(last) > 500 {
			t.Errorf("%s, %d bytes: last argument of %d bytes, stdin %d bytes", tc.goos, len(tc.prompt), len(last), len(spec.Stdin))
		}
	}
}
