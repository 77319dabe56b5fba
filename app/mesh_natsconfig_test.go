package app_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/mesh"
)

// Ensure `mesh invite` says the invite is for one relay, once, until when,
// and that `mesh nats-config` prints the users of this relay and of the
// relays it trusts, as configuration and as data.
func TestMeshInviteAndNATSConfigVerbs(t *testing.T) {
	a, b := startTrustedPair(t)
	loc := []string{"--port", strconv.Itoa(a.Config().Port), "--data-dir", a.Config().DataDir}
	out, errs, code := run(t, append([]string{"mesh", "invite"}, loc...)...)
	if code != 0 || !strings.Contains(out, "crosschat-relay serve --nats nats://crosschat:ccm1_") || !strings.Contains(out, "The invite lets one relay in, once, until") {
		t.Fatalf("mesh invite: %d %s %s", code, out, errs)
	}
	bStatus, err := b.Services.Mesh.Status()
	noErr(t, err)
	bKey, err := b.Services.Mesh.NATSConfig()
	noErr(t, err)
	out, errs, code = run(t, append([]string{"mesh", "nats-config", "--json"}, loc...)...)
	var cfg mesh.NATSConfig
	if code != 0 || json.Unmarshal([]byte(out), &cfg) != nil || len(cfg.Users) != 2 {
		t.Fatalf("mesh nats-config --json: %d %s %s", code, out, errs)
	}
	if cfg.Users[1].RelayID != bStatus.RelayID || cfg.Users[1].NKey != bKey.Users[0].NKey || !bKey.Users[0].Self {
		t.Fatalf("B's user on A = %+v; B's own = %+v", cfg.Users[1], bKey.Users[0])
	}
	out, errs, code = run(t, append([]string{"mesh", "nats-config"}, loc...)...)
	if code != 0 || !strings.Contains(out, "accounts {") || !strings.Contains(out, cfg.Users[0].Config) || !strings.Contains(out, cfg.Users[1].Config) {
		t.Fatalf("mesh nats-config: %d %s %s", code, out, errs)
	}
}
