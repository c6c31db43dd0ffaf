package workspace

import (
	"context"
	"errors"
	"os/exec"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// Git without the programs a repository may name. Whoever writes a
// repository's .git/config (the agent, a checked-out archive, another
// user) may make git run a program of theirs as the executor's user: an
// fsmonitor, hooks, a filter's clean/smudge/process command, an external
// diff or textconv, gpg for signatures, ssh and credential helpers for a
// transport. Reading a workspace must run none of them, so every git
// command tetherd runs switches them off on its command line, where
// nothing in a configuration file can switch them on again:
//
//   - core.fsmonitor off and hooks pointed at /dev/null (a worktree's
//     checkout runs post-checkout);
//   - no transport at all (protocol.allow=never, and GIT_ALLOW_PROTOCOL
//     empty in gitEnv, since a repository's own protocol.<name>.allow
//     overrides the former: a partial clone's lazy fetch would otherwise
//     run an ext:: command, an uploadpack, ssh and credential helpers);
//   - no signature checks in logs, no submodule recursion or summaries,
//     no automatic gc or maintenance;
//   - diffs with --no-ext-diff --no-textconv, and status ignoring what is
//     inside submodules' work trees (--ignore-submodules=dirty): the git
//     run there would read that submodule's own configuration;
//   - the filter drivers the repository's own configuration defines
//     (scopes local and worktree) emptied and made optional before every
//     command that may run them (runsNoFilter): their names are only known
//     by asking git, which runs nothing to answer.
//
// The executor user's own global and system configuration stay in force
// (a Git LFS filter installed there, say): they are the executor's, not
// the workspace's.

// safeConfig is on the command line of every git command.
var safeConfig = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "protocol.allow=never",
	"-c", "log.showSignature=false",
	"-c", "submodule.recurse=false",
	"-c", "status.submoduleSummary=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
}

// runsNoFilter are the git commands tetherd runs that never run a filter
// driver: they read objects, refs and configuration, never the working
// tree. Every other one may (to clean a file for the index, or smudge one
// checked out; even write-tree re-hashes a racily clean entry), so it gets
// the repository's filters switched off first.
var runsNoFilter = map[string]bool{"config": true, "init": true, "rev-parse": true, "check-ref-format": true,
	"diff-tree": true, "log": true, "cat-file": true, "commit-tree": true, "update-ref": true, "show-ref": true, "symbolic-ref": true}

// localFiltersOff returns -c arguments that switch off each filter driver
// defined in the configuration of dir's repository itself.
func localFiltersOff(ctx context.Context, dir string, env []string) ([]string, error) {
	out, _, err := runGit(ctx, dir, env, 1<<20, "config", "--show-scope", "--name-only", "--get-regexp", `^filter\.`)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return nil, nil // none defined
	}
	if err != nil {
		return nil, err
	}
	var args []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		scope, name, ok := strings.Cut(line, "\t")
		if !ok || scope == "global" || scope == "system" || scope == "command" {
			continue
		}
		driver := name[len("filter."):]
		i := strings.LastIndexByte(driver, '.')
		if i <= 0 {
			continue
		}
		driver = driver[:i]
		if seen[driver] {
			continue
		}
		seen[driver] = true
		if strings.ContainsAny(driver, "=\n") {
			// -c splits at the first "=": such a name cannot be
			// overridden on the command line, so nothing of it runs.
			return nil, errcode.New(errcode.WorkspaceRepositoryRefused,
				"tetherd does not run git on this repository: its configuration defines a filter named %q, which tetherd cannot switch off", driver)
		}
		for _, kv := range []string{"clean=", "smudge=", "process=", "required=false"} {
			args = append(args, "-c", "filter."+driver+"."+kv)
		}
	}
	return args, nil
}
