package app

import "github.com/crosschat/crosschat-relay/internal/mesh"

// NATSConfig returns the NATS users an external cluster needs for the
// relays this one knows (itself and those it trusts), each confined to its
// own subjects, as data and as nats-server configuration.
func (m *Mesh) NATSConfig() (mesh.NATSConfig, error) {
	node, ctx, err := m.get()
	if err != nil {
		return mesh.NATSConfig{}, err
	}
	if node == nil {
		return mesh.NATSConfig{}, errNoMesh
	}
	return node.NATSConfig(ctx)
}

// Credential returns what this relay's NATS credential was found to allow
// beyond its own subjects (zero outside a mesh). (Binding it also makes the
// generated models define mesh.CredentialCheck, which MeshStatus carries.)
func (m *Mesh) Credential() (mesh.CredentialCheck, error) {
	node, _, err := m.get()
	if err != nil || node == nil {
		return mesh.CredentialCheck{}, err
	}
	return node.Credential(), nil
}
