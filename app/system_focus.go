package app

import (
	"errors"
	"sync"
)

// Focus is whether the window has the keyboard focus, as the page
// reports it (System.ReportFocus); the shell shows no notification while
// it has.
type Focus struct {
	mu      sync.Mutex
	focused bool
}

func (f *Focus) set(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.focused = v
}

func (f *Focus) Focused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.focused
}

// ReportFocus is called by the window's page when it gains or loses focus:
// no notifications are shown while the window has it.
func (s *System) ReportFocus(focused bool) error {
	s.mu.Lock()
	f := s.focus
	s.mu.Unlock()
	if f == nil {
		return errors.New("no window")
	}
	f.set(focused)
	return nil
}

func (s *System) setFocus(f *Focus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.focus = f
}
