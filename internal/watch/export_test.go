package watch

import "path/filepath"

// Seen reports whether path was recorded so far, for tests. It asks the
// watcher's goroutine, so it sees every event handled before the call;
// after Close it reads the final set.
func (w *Watcher) Seen(path string) bool {
	q := query{path: filepath.Clean(path), reply: make(chan bool, 1)}
	select {
	case w.queries <- q:
		return <-q.reply
	case <-w.ctx.Done():
		w.wg.Wait()
		_, seen := w.touched[q.path]
		return seen
	}
}
