package sandbox

// privateDir is false: Windows runs are not sandboxed, and no rule needs it.
func privateDir(string, int) bool { return false }
