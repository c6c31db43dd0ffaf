// Package nodump makes a tetherd process non-dumpable (Linux's prctl
// PR_SET_DUMPABLE 0) in its init, before the inits of the packages that
// sort after it, so as early as a Go program can: cmd/tetherd imports it.
//
// An agent runs as the daemon's user, and without a sandbox it could
// otherwise read tetherd's and the executor host's /proc/<pid>/environ
// (TETHER_TOKEN, the host's paths), /proc/<pid>/mem (the tokens in
// memory), their open files (/proc/<pid>/fd) and working directory, or
// ptrace them: the kernel allows that to a process of the same user only
// while the target is dumpable. Root (CAP_SYS_PTRACE) still can. What
// stays open to every process is the command line and /proc/<pid>/stat
// and status. The start-up before this init (the Go runtime's own, and
// inits that come first) is the one window in which a process of the user
// may still read the environment.
//
// Every tetherd process is non-dumpable but the demo agent, which stands
// for an agent: agents, and everything tetherd starts, are as inspectable
// as any program (execve resets the flag). It also means no core dumps.
package nodump
