package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// RunFileName is the file a running relay keeps in its data folder so
// `status` and `import-upstream` can find it; it is removed on a clean stop.
const RunFileName = "crosschat-relay.run.json"

// RunInfo is the content of the run file.
type RunInfo struct {
	PID       int    `json:"pid"`
	Version   string `json:"version"`
	Mode      string `json:"mode"`
	StartedAt string `json:"startedAt"`
	// URL is the address this computer reaches the relay at.
	URL     string `json:"url"`
	DataDir string `json:"dataDir"`
	LogFile string `json:"logFile,omitempty"`
}

func writeRunFile(dataDir string, info RunInfo) error {
	return WriteJSONAtomic(filepath.Join(dataDir, RunFileName), info, "write run file")
}

// maxRunFile bounds what ReadRunFile reads: a run file is a few hundred bytes.
const maxRunFile = 64 << 10

// ReadRunFile returns the run file of dataDir; ok is false when there is
// none. A FIFO or a device planted there is refused, not waited on.
func ReadRunFile(dataDir string) (RunInfo, bool, error) {
	var info RunInfo
	b, err := ReadSmallFile(filepath.Join(dataDir, RunFileName), maxRunFile)
	if errors.Is(err, os.ErrNotExist) {
		return info, false, nil
	}
	if err != nil {
		return info, false, fmt.Errorf("read run file: %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, false, fmt.Errorf("read run file %s: %w", filepath.Join(dataDir, RunFileName), err)
	}
	return info, true, nil
}

// removeRunFile removes the run file if it is still this process's (what
// is no regular file is not: it is left).
func removeRunFile(dataDir string) error {
	info, ok, err := ReadRunFile(dataDir)
	if errors.Is(err, ErrNotRegular) {
		return nil
	}
	if err != nil || !ok || info.PID != os.Getpid() {
		return err
	}
	if err := os.Remove(filepath.Join(dataDir, RunFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove run file: %w", err)
	}
	return nil
}

func newRunInfo(r *Relay, opts StartOptions) RunInfo {
	mode := opts.Mode
	if mode == "" {
		mode = "serve"
	}
	return RunInfo{
		PID: os.Getpid(), Version: opts.Version, Mode: mode,
		StartedAt: relay.FormatTime(time.Now()), URL: r.cfg.BaseURL(),
		DataDir: r.cfg.DataDir, LogFile: LogPath(r.cfg),
	}
}
