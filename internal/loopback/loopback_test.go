package loopback_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/loopback"
)

// Ensures which hosts count as this computer.
func TestHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"LOCALHOST", true}, {"localhost.", true}, {"127.0.0.1", true}, {"127.1.2.3", true},
		{"::1", true}, {"[::1]", true}, {"::ffff:127.0.0.1", true}, {" 127.0.0.1 ", true},
		{"0.0.0.0", false}, {"::", false}, {"192.168.1.2", false}, {"example.com", false}, {"localhost.example", false},
		{"127.0.0.1:4318", false}, {"[::1", false}, {"", false},
	} {
		if got := loopback.Host(tc.host); got != tc.want {
			t.Errorf("Host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// Ensures the spelling Host reads a host in.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"LOCALHOST.": "localhost", " [::1] ": "::1", "127.0.0.1": "127.0.0.1", "Example.COM": "example.com"} {
		if got := loopback.Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

// Ensures which hosts are every address.
func TestEverywhere(t *testing.T) {
	for host, want := range map[string]bool{"": true, "0.0.0.0": true, "::": true, "[::]": true, " 0.0.0.0 ": true,
		"127.0.0.1": false, "::1": false, "localhost": false, "192.168.1.2": false} {
		if got := loopback.Everywhere(host); got != want {
			t.Errorf("Everywhere(%q) = %v, want %v", host, got, want)
		}
	}
}
