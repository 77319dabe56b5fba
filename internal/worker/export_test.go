package worker

// AbandonForTest makes the manager's loops and runs quit at once, leaving
// their CLIs running and their run folders behind, as a crash of the relay
// would.
func (m *Manager) AbandonForTest() {
	close(m.abandoned)
}
