package app

import (
	"encoding/base64"
	"errors"
	"net/http"

	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// This file holds the Tasks methods about a task's worker runs: their
// activity, and the files they made (previews, Show in folder).

// Activity returns the steps of a task's worker runs, oldest first.
func (t *Tasks) Activity(id string) ([]relay.ActivityEntry, error) {
	svc, ctx, err := t.c.get()
	if err != nil {
		return nil, err
	}
	if id, err = relay.TaskID("id", id); err != nil {
		return nil, err
	}
	return svc.Activity(ctx, id)
}

// maxPreview bounds a previewed picture.
const maxPreview = 8 << 20

// FilePreview is a picture a run made, as a data URL.
type FilePreview struct {
	Path    string `json:"path"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	DataURL string `json:"dataUrl"`
}

// changedFile checks that path is a file a run of the task recorded.
func (t *Tasks) changedFile(id, path string) (string, error) {
	svc, ctx, err := t.c.get()
	if err != nil {
		return "", err
	}
	if id, err = relay.TaskID("id", id); err != nil {
		return "", err
	}
	ok, err := svc.TaskChangedFile(ctx, id, path)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", relay.Errorf(relay.EInvalidRequest, "path: %s is not a file this task's runs changed.", path)
	}
	return path, nil
}

// FilePreview returns a picture a run of the task made (PNG, JPEG, GIF,
// WebP; at most 8 MiB). Other files are refused.
func (t *Tasks) FilePreview(id, path string) (FilePreview, error) {
	path, err := t.changedFile(id, path)
	if err != nil {
		return FilePreview{}, err
	}
	b, err := ReadSmallFile(path, maxPreview+1)
	switch {
	case errors.Is(err, ErrLink), errors.Is(err, ErrNotRegular):
		return FilePreview{}, relay.Errorf(relay.EInvalidRequest, "path: %s is no longer a file the run made (%v).", path, err)
	case err != nil:
		return FilePreview{}, relay.Errorf(relay.EInvalidRequest, "path: %s can no longer be read.", path)
	case len(b) > maxPreview:
		return FilePreview{}, relay.Errorf(relay.EInvalidRequest, "path: %s is too large to preview.", path)
	}
	typ := http.DetectContentType(b)
	switch typ {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return FilePreview{}, relay.Errorf(relay.EInvalidRequest, "path: %s is not a picture (%s).", path, typ)
	}
	return FilePreview{Path: path, Type: typ, Size: int64(len(b)), DataURL: "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(b)}, nil
}

// RevealFile shows a file a run of the task made in the system's file manager.
func (t *Tasks) RevealFile(id, path string) error {
	path, err := t.changedFile(id, path)
	if err != nil {
		return err
	}
	return shownError(desktop.Reveal(path))
}

// shownError is the error of a Show in folder for the dashboard: the
// opener's own words (no file manager answered, no desktop), which a plain
// error would lose to the relay's generic internal message.
func shownError(err error) error {
	if err == nil {
		return nil
	}
	return relay.Errorf(relay.EInternal, "%s", err.Error())
}
