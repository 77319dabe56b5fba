package sandbox

// privateDir is false: Windows runs are not sandboxed, and no rule needs it.
func privateDir(string, int) bool { return false }

// syscallNoFollow: Windows runs are not sandboxed, nothing to guard.
const syscallNoFollow = 0
