package main

// The rewind part (-only rewind, issue 32): what a fork and a rewind cost
// on the real binary with the demo agent, standalone.
//
//   - fork: a session of -rewind-turns turns whose workspace holds
//     -rewind-files files at its last turn (the files are written before
//     that turn, so every earlier turn's checkpoint stays small and the
//     preparation quick); POST /session/{id}/fork at the last turn sent →
//     201 received: the copy of every turn's events, a new worktree, and
//     the turn's end state written into it (every file). One fork a round.
//   - rewind: a session of two turns, the second of which changed
//     -rewind-changed files of a -rewind-files workspace; POST …/rewind to
//     the first sent → 200 received (a safety checkpoint of the files,
//     then the changed files restored), then POST …/rewind/undo (the same
//     cost, back), each timed. One rewind and one undo a round.
//
// The median of the rounds is reported with the load average.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// rewindConfig are the rewind part's settings (flags: rewindFlags).
type rewindConfig struct {
	Rounds  int
	Turns   int // turns of the forked session
	Files   int // files of both workspaces
	Changed int // files the rewound turn changed
	Keep    bool
	Logf    func(format string, args ...any)
}

// rewindFlags registers the rewind part's flags on the command line.
func rewindFlags() *rewindConfig {
	c := &rewindConfig{}
	flag.IntVar(&c.Rounds, "rewind-rounds", 3, "rewind: rounds (median reported)")
	flag.IntVar(&c.Turns, "rewind-turns", 1000, "rewind: turns of the forked session")
	flag.IntVar(&c.Files, "rewind-files", 10000, "rewind: files of the workspaces")
	flag.IntVar(&c.Changed, "rewind-changed", 1000, "rewind: files the rewound turn changed")
	flag.BoolVar(&c.Keep, "rewind-keep", false, "rewind: keep the temp dir (data dir, daemon log)")
	return c
}

// rewindResult is the part's outcome.
type rewindResult struct {
	Cfg                   rewindConfig
	Prepare               time.Duration
	Forks, Rewinds, Undos []time.Duration
	Written               int
	Loads                 []string
}

// writeFiles writes n files of a few hundred bytes under dir, 100 to a
// directory, each naming itself and tag.
func writeFiles(dir string, n int, tag string) error {
	for i := range n {
		d := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		body := fmt.Sprintf("// file %d, %s\npackage d%03d\n\nconst Name = %q\n", i, tag, i/100, fmt.Sprintf("f%05d-%s", i, tag))
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.go", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func rewindBench(ctx context.Context, cfg rewindConfig) (res rewindResult, err error) {
	res.Cfg = cfg
	if cfg.Rounds <= 0 || cfg.Turns <= 0 || cfg.Files <= 0 || cfg.Changed <= 0 || cfg.Changed > cfg.Files {
		return res, fmt.Errorf("rewind: -rewind-rounds, -rewind-turns, -rewind-files and -rewind-changed must be positive, changed at most files")
	}
	rb, done, err := newRun("rewind", restartConfig{Logf: cfg.Logf}, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	load := func(what string) {
		res.Loads = append(res.Loads, what+": "+loadavg())
	}
	load("start")
	if err := rb.prepare(ctx); err != nil {
		return res, err
	}
	dir := filepath.Join(rb.root, "data")
	p, err := rb.launch(dir, "rewind")
	if err != nil {
		return res, err
	}
	defer func() { _ = p.term() }()
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return res, err
	}
	begin := time.Now()
	forked, last, err := rb.longSession(ctx, p, cfg)
	if err != nil {
		return res, fmt.Errorf("rewind: preparing the long session: %w (log %s)", err, p.logPath)
	}
	rewound, err := rb.changedSession(ctx, p, cfg)
	if err != nil {
		return res, fmt.Errorf("rewind: preparing the rewound session: %w (log %s)", err, p.logPath)
	}
	res.Prepare = time.Since(begin)
	load("prepared")
	for round := range cfg.Rounds {
		var fork struct {
			ID string `json:"id"`
		}
		t0 := time.Now()
		if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+forked+"/fork", map[string]any{"atTurn": last}, &fork); err != nil {
			return res, fmt.Errorf("rewind: fork, round %d: %w", round+1, err)
		}
		res.Forks = append(res.Forks, time.Since(t0))
		var r struct {
			Files []any `json:"files"`
		}
		t0 = time.Now()
		if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+rewound+"/rewind", map[string]any{"toTurn": "r1"}, &r); err != nil {
			return res, fmt.Errorf("rewind: rewind, round %d: %w", round+1, err)
		}
		res.Rewinds = append(res.Rewinds, time.Since(t0))
		if len(r.Files) != cfg.Changed {
			return res, fmt.Errorf("rewind: round %d restored %d files, want %d", round+1, len(r.Files), cfg.Changed)
		}
		t0 = time.Now()
		if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+rewound+"/rewind/undo", nil, nil); err != nil {
			return res, fmt.Errorf("rewind: undo, round %d: %w", round+1, err)
		}
		res.Undos = append(res.Undos, time.Since(t0))
		// The fork's agent and worktree are not measured: close it.
		_, _ = rb.api(ctx, p, http.MethodDelete, "/session/"+fork.ID, nil, nil)
		load(fmt.Sprintf("round %d done", round+1))
		cfg.Logf("rewind: round %d: fork %s, rewind %s, undo %s", round+1, res.Forks[round], res.Rewinds[round], res.Undos[round])
	}
	res.Written = cfg.Files + 1 // README.md besides
	return res, nil
}

// longSession makes a session of cfg.Turns turns in a repository of its
// own whose last turn sees cfg.Files files; it returns the session and
// its last turn.
func (rb *restartRun) longSession(ctx context.Context, p *tetherdProc, cfg rewindConfig) (sid, last string, err error) {
	repo := filepath.Join(rb.root, "long")
	if err := gitRepoAt(ctx, repo); err != nil {
		return "", "", err
	}
	var s struct {
		ID string `json:"id"`
	}
	if _, err := rb.api(ctx, p, http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": repo}, &s); err != nil {
		return "", "", err
	}
	for i := 1; i <= cfg.Turns; i++ {
		if i == cfg.Turns {
			if err := writeFiles(repo, cfg.Files, "long"); err != nil {
				return "", "", err
			}
		}
		last = fmt.Sprintf("t%d", i)
		if err := rb.promptAndWait(ctx, p, s.ID, last, fmt.Sprintf("/echo turn %d of a long session", i)); err != nil {
			return "", "", err
		}
		if i%100 == 0 {
			cfg.Logf("rewind: long session: %d turns", i)
		}
	}
	return s.ID, last, nil
}

// changedSession makes a session whose turn r1 ends on cfg.Files files
// and whose turn r2 changed cfg.Changed of them.
func (rb *restartRun) changedSession(ctx context.Context, p *tetherdProc, cfg rewindConfig) (string, error) {
	dir := filepath.Join(rb.root, "changed")
	if err := gitRepoAt(ctx, dir); err != nil {
		return "", err
	}
	if err := writeFiles(dir, cfg.Files, "before"); err != nil {
		return "", err
	}
	var s struct {
		ID string `json:"id"`
	}
	if _, err := rb.api(ctx, p, http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": dir}, &s); err != nil {
		return "", err
	}
	if err := rb.promptAndWait(ctx, p, s.ID, "r1", "/echo the files before"); err != nil {
		return "", err
	}
	if err := writeFiles(dir, cfg.Changed, "after"); err != nil {
		return "", err
	}
	return s.ID, rb.promptAndWait(ctx, p, s.ID, "r2", "/echo the files after")
}

// promptAndWait sends a prompt and waits until its turn completed.
func (rb *restartRun) promptAndWait(ctx context.Context, p *tetherdProc, sid, pid, text string) error {
	if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+sid+"/prompt", map[string]any{"prompt": textPrompt(text), "promptId": pid}, nil); err != nil {
		return err
	}
	return rb.waitTurn(ctx, p, sid, pid, func(state string) (bool, error) {
		switch state {
		case "completed":
			return true, nil
		case "failed", "cancelled", "interrupted":
			return false, fmt.Errorf("session %s: turn %s %s", sid, pid, state)
		}
		return false, nil
	})
}

// gitRepoAt makes a repository with one commit (README.md) at dir.
func gitRepoAt(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# bench repository\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "first"}} {
		if err := gitRun(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

func printRewind(r rewindResult) {
	c := r.Cfg
	fmt.Printf("rewind: fork of a session of %d turns with %d files; rewind of %d changed files of %d (median of %d, standalone, demo agent)\n",
		c.Turns, c.Files, c.Changed, c.Files, c.Rounds)
	fmt.Printf("  prepared in %s\n", r.Prepare.Round(time.Millisecond))
	fmt.Printf("  %-34s %10s %s\n", "fork (POST sent → 201)", medianDur(r.Forks).Round(time.Millisecond), durList(r.Forks))
	fmt.Printf("  %-34s %10s %s\n", "rewind (POST sent → 200)", medianDur(r.Rewinds).Round(time.Millisecond), durList(r.Rewinds))
	fmt.Printf("  %-34s %10s %s\n", "undo (POST sent → 200)", medianDur(r.Undos).Round(time.Millisecond), durList(r.Undos))
	fmt.Printf("  goals: fork ≤ 2s %s, rewind ≤ 1s %s\n", metStr(medianDur(r.Forks) <= 2*time.Second), metStr(medianDur(r.Rewinds) <= time.Second))
	for _, l := range r.Loads {
		fmt.Printf("  loadavg %s\n", l)
	}
	fmt.Println()
}

// gitRun runs git in dir with a fixed identity and no user configuration.
func gitRun(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@localhost",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@localhost", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}
