package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/labstack/gommon/bytes"

	"github.com/tether/tether/internal/workspace"
)

// fileFlags are the --fs-* flags bounding the agents' fs requests, shared
// by the daemon (its own agents) and the host (agents it runs).
type fileFlags struct {
	readLimit, writeLimit string
	limits                workspace.FileLimits
}

// addFileFlags defines the --fs-* flags on fs.
func addFileFlags(fs *flag.FlagSet) *fileFlags {
	f := &fileFlags{}
	fs.StringVar(&f.readLimit, "fs-read-limit", "4M", "most bytes one agent fs/read_text_file returns; larger whole-file reads are refused with the size (the agent reads ranges with line/limit)")
	fs.StringVar(&f.writeLimit, "fs-write-limit", "4M", "most bytes one agent fs/write_text_file stores")
	fs.IntVar(&f.limits.Concurrency, "fs-concurrency", workspace.DefaultConcurrency, "agent fs requests served at once, per agent")
	fs.IntVar(&f.limits.Queue, "fs-queue", workspace.DefaultQueue, "agent fs requests that may wait for a slot, per agent; more are refused as busy")
	fs.DurationVar(&f.limits.Timeout, "fs-timeout", workspace.DefaultFileTimeout, "timeout of each agent fs request, waiting included")
	return f
}

// args renders the flags as given, for a child that takes the same ones
// (the detached host the daemon starts).
func (f *fileFlags) args() []string {
	l := f.limits
	return []string{"--fs-read-limit", f.readLimit, "--fs-write-limit", f.writeLimit,
		"--fs-concurrency", fmt.Sprint(l.Concurrency), "--fs-queue", fmt.Sprint(l.Queue), "--fs-timeout", l.Timeout.String()}
}

// parse checks the parsed flags and returns the limits they set.
func (f *fileFlags) parse() (workspace.FileLimits, error) {
	l := f.limits
	for _, s := range []struct {
		flag, value string
		dst         *int64
	}{{"--fs-read-limit", f.readLimit, &l.ReadLimit}, {"--fs-write-limit", f.writeLimit, &l.WriteLimit}} {
		n, err := bytes.Parse(s.value)
		if err != nil || n <= 0 {
			return l, fmt.Errorf("%s: want a positive size such as 4M, got %q", s.flag, s.value)
		}
		*s.dst = n
	}
	if l.Concurrency <= 0 || l.Queue < 0 || l.Timeout <= 0 {
		return l, errors.New("--fs-concurrency and --fs-timeout must be positive, --fs-queue not negative")
	}
	if l.Queue == 0 {
		l.Queue = -1 // FileLimits: negative means no waiting
	}
	return l, nil
}
