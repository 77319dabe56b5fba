package config

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
)

// Mesh environment variables.
const (
	EnvNATS          = "CROSSCHAT_NATS"
	EnvNATSCreds     = "CROSSCHAT_NATS_CREDS"
	EnvNATSNKey      = "CROSSCHAT_NATS_NKEY"
	EnvNATSTLSCA     = "CROSSCHAT_NATS_TLS_CA"
	EnvNATSEmbed     = "CROSSCHAT_NATS_EMBED"
	EnvNATSName      = "CROSSCHAT_NATS_NAME"
	EnvNATSReplicas  = "CROSSCHAT_NATS_REPLICAS"
	EnvNATSEmbedOpen = "CROSSCHAT_NATS_EMBED_OPEN"
	EnvNATSStrict    = "CROSSCHAT_NATS_STRICT"
	EnvMeshTrust     = "CROSSCHAT_MESH_TRUST"
)

// Mesh trust modes (--mesh-trust).
const (
	// TrustApproval: every relay seen waits for the operator's approval.
	TrustApproval = "approval"
	// TrustAccount: the NATS account is the boundary; every relay on it is trusted.
	TrustAccount = "account"
)

// Mesh configures joining relays over NATS JetStream. The zero value is no mesh.
type Mesh struct {
	// URLs are the NATS servers (--nats).
	URLs []string
	// Creds, NKey and TLSCA are client credential files.
	Creds, NKey, TLSCA string
	// Embed runs a NATS server in the relay on this HOST:PORT (--nats-embed).
	Embed string
	// Name is this relay's name in the mesh; default its stored name or the host name.
	Name string
	// Replicas is the JetStream replica count: 1 for one server, 3 for a cluster.
	Replicas int
	// EmbedOpen lets anonymous clients into the embedded server (--nats-embed-open).
	EmbedOpen bool
	// Strict refuses to join with a NATS credential that can delete or
	// purge what the mesh keeps (--nats-strict).
	Strict bool
	// Trust is TrustApproval (default) or TrustAccount (--mesh-trust).
	Trust string
}

// Enabled reports whether the relay joins a mesh.
func (m Mesh) Enabled() bool { return len(m.URLs) > 0 || m.Embed != "" }

func (c *Config) meshFlags(fs *flag.FlagSet, env Env) {
	m := &c.Mesh
	m.URLs = splitList(envOr(env, EnvNATS, ""))
	fs.Func("nats", "join a mesh: comma-separated NATS server URLs (env "+EnvNATS+")", func(s string) error {
		m.URLs = splitList(s)
		return nil
	})
	fs.StringVar(&m.Creds, "nats-creds", envOr(env, EnvNATSCreds, ""), "NATS user credentials file (env "+EnvNATSCreds+")")
	fs.StringVar(&m.NKey, "nats-nkey", envOr(env, EnvNATSNKey, ""), "NATS NKey seed file (env "+EnvNATSNKey+")")
	fs.StringVar(&m.TLSCA, "nats-tls-ca", envOr(env, EnvNATSTLSCA, ""), "CA certificate file for NATS over TLS (env "+EnvNATSTLSCA+")")
	fs.StringVar(&m.Embed, "nats-embed", envOr(env, EnvNATSEmbed, ""), "run a NATS server with JetStream inside this relay on HOST:PORT, stored in the data folder (env "+EnvNATSEmbed+")")
	fs.StringVar(&m.Name, "nats-name", envOr(env, EnvNATSName, ""), "this relay's name in the mesh; default the host name (env "+EnvNATSName+")")
	fs.BoolVar(&m.EmbedOpen, "nats-embed-open", envBool(env, EnvNATSEmbedOpen),
		"let anyone who can reach the embedded NATS server in, with every permission: they can read every task and delete the stream, consumers and directory (env "+EnvNATSEmbedOpen+")")
	fs.BoolVar(&m.Strict, "nats-strict", envBool(env, EnvNATSStrict),
		"refuse to join the mesh with a NATS credential that can delete or purge the stream, a consumer or the directory (env "+EnvNATSStrict+")")
	fs.StringVar(&m.Trust, "mesh-trust", envOr(env, EnvMeshTrust, TrustApproval),
		"how relays are admitted: approval (each relay waits for the operator's mesh trust) or account (every relay on the NATS account is trusted; env "+EnvMeshTrust+")")
	fs.IntVar(&m.Replicas, "nats-replicas", c.envInt(env, EnvNATSReplicas, 1), "JetStream replicas of the mesh stream and directory: 1, or 3 on a cluster (env "+EnvNATSReplicas+")")
}

// finish checks the mesh settings.
func (m Mesh) finish() error {
	if m.Trust != TrustApproval && m.Trust != TrustAccount {
		return fmt.Errorf("--mesh-trust: must be approval or account, got %q", m.Trust)
	}
	if m.Replicas < 0 || m.Replicas > 5 {
		return fmt.Errorf("--nats-replicas: must be 1..5, got %d", m.Replicas)
	}
	if m.Embed != "" {
		_, port, err := net.SplitHostPort(m.Embed)
		if err != nil {
			return fmt.Errorf("--nats-embed: %w", err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("--nats-embed: bad port %q", port)
		}
	}
	for flagName, f := range map[string]string{"--nats-creds": m.Creds, "--nats-nkey": m.NKey, "--nats-tls-ca": m.TLSCA} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w", flagName, err)
		}
	}
	return nil
}

// envBool reads a yes/no variable: 1 or true is yes.
func envBool(env Env, key string) bool {
	v := envOr(env, key, "")
	return v == "1" || v == "true"
}
