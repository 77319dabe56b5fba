package relay

// Error codes of a post whose targetSession names no session, or several,
// the recipient can be reached in (resolved when the task is posted).
const (
	// ESessionNotFound: no session of the recipient has that id or exact
	// name; details carry up to five similar names.
	ESessionNotFound = "session_not_found"
	// ESessionAmbiguous: several sessions of the recipient have that exact
	// name; details carry the candidates with their ids.
	ESessionAmbiguous = "session_ambiguous"
)

// SessionFolders are the folders an any-session worker may resume a
// session from: its working folder, its extra folders and the paths its
// sandbox may read and write.
func (c WorkerConfig) SessionFolders() []string {
	out := append([]string{c.Workdir}, c.ExtraDirs...)
	for _, p := range c.AllowPaths {
		if path, rw := CutAllowPath(p); rw {
			out = append(out, path)
		}
	}
	return out
}
