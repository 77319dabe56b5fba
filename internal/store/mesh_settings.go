package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// keyMeshSettings holds the window's mesh settings as JSON.
const keyMeshSettings = "mesh.settings"

// MeshSettings returns the saved mesh settings (zero when none are saved).
func (m *Mesh) MeshSettings(ctx context.Context) (relay.MeshSettings, error) {
	var s relay.MeshSettings
	v, err := optionalString(ctx, m.db.r, "read mesh settings", settingSQL, keyMeshSettings)
	if err != nil || v == "" {
		return s, err
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("read mesh settings: %w", err)
	}
	return s, nil
}

// SetMeshSettings saves the mesh settings (checked by the caller); they
// apply at the next start.
func (m *Mesh) SetMeshSettings(ctx context.Context, s relay.MeshSettings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("store mesh settings: %w", err)
	}
	return m.db.writeOne(ctx, "store mesh settings", upsertSettingSQL, keyMeshSettings, string(b))
}
