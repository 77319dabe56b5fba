package desktop

// traySessionBus: the Windows notification area needs no bus.
func traySessionBus() error { return nil }
