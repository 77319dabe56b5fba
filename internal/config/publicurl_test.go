package config_test

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// Ensure --public-url (and CROSSCHAT_PUBLIC_URL) is checked and normalized,
// the flag winning over the environment.
func TestPublicURL(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    string
		wantErr string
	}{
		{"unset", nil, nil, "", ""},
		{"flag", nil, []string{"--public-url", "https://relay.example.com/"}, "https://relay.example.com", ""},
		{"env", map[string]string{config.EnvPublicURL: "http://192.168.1.20:4318"}, nil, "http://192.168.1.20:4318", ""},
		{"flag beats env", map[string]string{config.EnvPublicURL: "http://a:1"}, []string{"--public-url", "http://b:2"}, "http://b:2", ""},
		{"path behind a proxy", nil, []string{"--public-url", "https://example.com/crosschat/"}, "https://example.com/crosschat", ""},
		{"ipv6", nil, []string{"--public-url", "http://[fd00::1]:4318"}, "http://[fd00::1]:4318", ""},
		{"no scheme", nil, []string{"--public-url", "relay.example.com"}, "", "http or https URL"},
		{"other scheme", nil, []string{"--public-url", "ftp://relay.example.com"}, "", "http or https URL"},
		{"no host", nil, []string{"--public-url", "https://"}, "", "http or https URL"},
		{"user", nil, []string{"--public-url", "https://me:pw@relay.example.com"}, "", "user, query or fragment"},
		{"query", nil, []string{"--public-url", "https://relay.example.com/?a=1"}, "", "user, query or fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, mapEnv(tt.env), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--public-url") {
					t.Fatalf("err %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PublicURL != tt.want {
				t.Fatalf("PublicURL %q, want %q", c.PublicURL, tt.want)
			}
		})
	}
}

// Ensure the advertised address is --public-url when set, else the address
// the caller reached, else the relay's own.
func TestAdvertisedURL(t *testing.T) {
	c := config.Config{Host: "127.0.0.1", Port: 4318}
	for _, tt := range []struct{ public, reached, want string }{
		{"", "", c.BaseURL()},
		{"", "http://192.168.1.20:4318", "http://192.168.1.20:4318"},
		{"https://relay.example.com", "http://192.168.1.20:4318", "https://relay.example.com"},
		{"https://relay.example.com", "", "https://relay.example.com"},
	} {
		c.PublicURL = tt.public
		if got := c.AdvertisedURL(tt.reached); got != tt.want {
			t.Errorf("public %q, reached %q: %q, want %q", tt.public, tt.reached, got, tt.want)
		}
	}
}

// Ensure the address to listen on and dial, and the URL advertised, read
// the host in any spelling a flag may give it: "[::1]" was dialled as
// "[[::1]]:4319", which no client could parse.
func TestAddrAndBaseURLOfEachSpelling(t *testing.T) {
	for _, tt := range []struct{ host, addr, base string }{
		{"127.0.0.1", "127.0.0.1:4319", "http://localhost:4319"},
		{"::1", "[::1]:4319", "http://localhost:4319"},
		{"[::1]", "[::1]:4319", "http://localhost:4319"},
		{"LOCALHOST.", "localhost:4319", "http://localhost:4319"},
		{"127.0.0.2", "127.0.0.2:4319", "http://127.0.0.2:4319"},
		{"0.0.0.0", "0.0.0.0:4319", "http://localhost:4319"},
		{"[::]", "[::]:4319", "http://localhost:4319"},
	} {
		c := config.Config{Host: tt.host, Port: 4319}
		if got := c.Addr(); got != tt.addr {
			t.Errorf("%s: Addr %q, want %q", tt.host, got, tt.addr)
		}
		if got := c.BaseURL(); got != tt.base {
			t.Errorf("%s: BaseURL %q, want %q", tt.host, got, tt.base)
		}
	}
}
