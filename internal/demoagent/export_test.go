package demoagent

// SetExitForTest replaces the function /crash and /crash-in-tool call
// instead of os.Exit, for agents started after the call. It returns a
// function restoring the previous one. Tests using it must not run in
// parallel with each other.
func SetExitForTest(f func(code int)) (restore func()) {
	old := osExit
	osExit = f
	return func() { osExit = old }
}
