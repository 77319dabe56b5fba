package app_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/relay"
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

// Ensure strict mode refuses a credential that can delete streams: from
// saved settings the relay starts without the mesh and Settings says why,
// from flags the relay does not start; without it the relay joins and its
// status names what the credential can do.
func TestMeshStrictFromSettingsAndFlags(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	noErr(t, err)
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(srv.Shutdown)

	cfg := apptest.Config(filepath.Join(t.TempDir(), "data"))
	cfg.Mesh = config.Mesh{Replicas: 1}
	r, err := app.Start(cfg, app.StartOptions{Version: "test"})
	noErr(t, err)
	_, err = r.Services.Mesh.SaveMeshSettings(relay.MeshSettings{URLs: []string{srv.ClientURL()}, Strict: true})
	noErr(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	noErr(t, r.Shutdown(ctx))
	r, err = app.Start(cfg, app.StartOptions{Version: "test"})
	noErr(t, err)
	v, err := r.Services.Mesh.MeshSettings()
	noErr(t, err)
	if st, _ := r.Services.Mesh.Status(); st.Enabled || v.Source != app.MeshFromNone || !strings.Contains(v.Error, "can delete consumers, delete messages, delete streams") {
		t.Fatalf("strict from settings: enabled %v, %+v", st.Enabled, v)
	}
	noErr(t, r.Shutdown(ctx))

	flags := apptest.Config(filepath.Join(t.TempDir(), "data"))
	flags.Mesh = config.Mesh{URLs: []string{srv.ClientURL()}, Replicas: 1, Strict: true}
	if r, err := app.Start(flags, app.StartOptions{Version: "test"}); err == nil {
		_ = r.Shutdown(ctx)
		t.Fatal("a relay started with --nats-strict and a credential that can delete streams")
	} else if !strings.Contains(err.Error(), "strict mode") {
		t.Fatalf("strict from flags = %v", err)
	}

	flags.Mesh.Strict = false
	r = apptest.Start(t, flags, app.StartOptions{Version: "test"})
	waitFor(t, func() bool {
		st, err := r.Services.Mesh.Status()
		return err == nil && st.Ready && len(st.Credential.Can) > 0 && !st.Strict
	}, "the relay joined and names what its credential can do")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	out, errs, code := run(t, append([]string{"mesh", "status"}, loc...)...)
	if code != 0 || !strings.Contains(out, "Warning: this relay's NATS credential can delete consumers") {
		t.Fatalf("mesh status: %d %s %s", code, out, errs)
	}
}
