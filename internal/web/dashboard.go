package web

import (
	"bytes"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// contentSecurityPolicy is sent with every dashboard response. Inline
// styles are allowed because Vue transitions and the Wails runtime set
// style attributes; scripts are not.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// notBuilt is the text served when there is no dashboard to serve.
const notBuilt = "The dashboard is not built into this relay. Build the frontend, or use the desktop app.\n"

// setDashboardHeaders sets the security headers of dashboard responses.
func setDashboardHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// serveDashboard serves GET|HEAD of the built dashboard: the named file if
// it exists, else index.html so client-side routes work. Paths are cleaned
// and resolved inside an fs.FS, so nothing outside it can be reached.
func (h *handler) serveDashboard(w http.ResponseWriter, r *http.Request) {
	setDashboardHeaders(w)
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	if h.assets != nil && fs.ValidPath(name) {
		if data, mod, err := readFile(h.assets, name); err == nil {
			if strings.HasPrefix(name, "assets/") {
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				w.Header().Set("Cache-Control", "no-cache")
			}
			serveBytes(w, r, name, mod, data)
			return
		}
	}
	// A missing hashed asset is a 404, not index.html: caching HTML as a
	// script for a year would break the next deploy.
	if strings.HasPrefix(name, "assets/") {
		w.Header().Set("Cache-Control", "no-cache")
		http.Error(w, "Not found.", http.StatusNotFound)
		return
	}
	if h.assets != nil {
		if data, mod, err := readFile(h.assets, "index.html"); err == nil {
			w.Header().Set("Cache-Control", "no-cache")
			serveBytes(w, r, "index.html", mod, data)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.Error(w, notBuilt, http.StatusNotFound)
}

// readFile returns the contents and modification time of a regular file.
func readFile(fsys fs.FS, name string) ([]byte, time.Time, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !st.Mode().IsRegular() {
		return nil, time.Time{}, errors.New("not a regular file")
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return data, st.ModTime(), nil
}

// serveBytes serves a file's contents with conditional and range support.
func serveBytes(w http.ResponseWriter, r *http.Request, name string, mod time.Time, data []byte) {
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	http.ServeContent(w, r, name, mod, bytes.NewReader(data))
}
