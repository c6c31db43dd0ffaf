package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How the restart bench prepares its crashed data dir (sessions with
// finished turns, turns left hanging, a kill -9) and checks what a
// restart made of it.

func textPrompt(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

type benchTurn struct {
	PromptID        string `json:"promptId"`
	State           string `json:"state"`
	InterruptReason string `json:"interruptReason"`
}

// createFinished creates a demo session with an initial prompt and waits
// until that first turn has completed (its agent then idles).
func (rb *restartRun) createFinished(ctx context.Context, p *tetherdProc, i int) (string, error) {
	return rb.createFinishedOn(ctx, p, i, "")
}

// createFinishedOn is createFinished on the given executor ("": the
// daemon's default).
func (rb *restartRun) createFinishedOn(ctx context.Context, p *tetherdProc, i int, executor string) (string, error) {
	var s struct {
		ID string `json:"id"`
	}
	body := map[string]any{"agentProfileId": "demo", "cwd": rb.cwd, "title": fmt.Sprintf("bench %d", i),
		"initialPrompt": textPrompt(fmt.Sprintf("/echo session %d ready", i)), "promptId": "p1"}
	if executor != "" {
		body["executor"] = executor
	}
	_, err := rb.api(ctx, p, http.MethodPost, "/session", body, &s)
	if err != nil {
		return "", err
	}
	return s.ID, rb.waitTurn(ctx, p, s.ID, "p1", func(state string) (bool, error) {
		switch state {
		case "completed":
			return true, nil
		case "failed", "cancelled", "interrupted":
			return false, fmt.Errorf("session %s: first turn %s", s.ID, state)
		}
		return false, nil
	})
}

// waitTurn polls a turn until done says so.
func (rb *restartRun) waitTurn(ctx context.Context, p *tetherdProc, sid, pid string, done func(string) (bool, error)) error {
	end := time.Now().Add(120 * time.Second)
	for {
		var t benchTurn
		code, err := rb.api(ctx, p, http.MethodGet, "/session/"+sid+"/turns/"+pid, nil, &t)
		if err == nil {
			ok, derr := done(t.State)
			if derr != nil || ok {
				return derr
			}
		} else if code != http.StatusNotFound {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("session %s turn %s: still %q after 120s", sid, pid, t.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// parallel runs f(i) for i in [from, to) on n workers; the first error wins.
func parallel(ctx context.Context, from, to, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	next.Store(int64(from))
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// prepareCrash builds the crashed data dir: sessions in waves of at most
// cfg.Wave live agents, each wave ended by a clean stop (SIGTERM) so the
// agents go away; the next start reconciles that wave (executor rows →
// stopped). The last wave holds the cfg.MidTurn sessions that get a /hang
// turn, and ends with kill -9 of the daemon and of its agents' process
// groups. It returns the mid-turn sessions.
func (rb *restartRun) prepareCrash(ctx context.Context, dir string) ([]string, error) {
	cfg := rb.cfg
	idle := cfg.Sessions - cfg.MidTurn
	var waves [][2]int
	for from := 0; from < idle; from += cfg.Wave {
		waves = append(waves, [2]int{from, min(from+cfg.Wave, idle)})
	}
	waves = append(waves, [2]int{idle, cfg.Sessions})
	ids := make([]string, cfg.Sessions)
	var stale []int // the previous wave's agents: their rows stay ready after a clean stop
	for wi, w := range waves {
		if err := guardPIDs(stale); err != nil {
			return nil, err
		}
		p, err := rb.launch(dir, fmt.Sprintf("prep-wave%d", wi+1))
		if err != nil {
			return nil, err
		}
		if _, err := rb.waitHealthy(ctx, p); err != nil {
			return nil, err
		}
		t0 := time.Now()
		err = parallel(ctx, w[0], w[1], cfg.Create, func(ctx context.Context, i int) error {
			id, err := rb.createFinished(ctx, p, i)
			ids[i] = id
			return err
		})
		if err != nil {
			p.kill9()
			return nil, fmt.Errorf("wave %d: %w (log %s)", wi+1, err, p.logPath)
		}
		rb.cfg.Logf("restart: prepare: wave %d/%d: %d sessions created and prompted in %s, loadavg %s", wi+1, len(waves),
			w[1]-w[0], time.Since(t0).Round(time.Millisecond), loadavg())
		if wi < len(waves)-1 {
			stale = agentProcs(dir)
			if err := p.term(); err != nil {
				return nil, err
			}
			rb.sweep(dir)
			continue
		}
		// Last wave: put a turn in flight in each, then crash.
		hung := ids[w[0]:w[1]]
		err = parallel(ctx, 0, len(hung), cfg.Create, func(ctx context.Context, i int) error {
			sid := hung[i]
			if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+sid+"/prompt",
				map[string]any{"prompt": textPrompt("/hang"), "promptId": "hang"}, nil); err != nil {
				return err
			}
			return rb.waitHanging(ctx, p, sid)
		})
		if err != nil {
			p.kill9()
			return nil, fmt.Errorf("hang turns: %w", err)
		}
		p.kill9()
		n, err := rb.killAgents(dir)
		if err != nil {
			return nil, err
		}
		rb.cfg.Logf("restart: prepare: kill -9 with %d turns running; killed %d orphaned agent processes", len(hung), n)
		return slices.Clone(hung), nil
	}
	return nil, errors.New("no waves")
}

// waitHanging waits until the session's /hang turn is running and the
// agent's first words of it ("hanging…") are in the transcript.
func (rb *restartRun) waitHanging(ctx context.Context, p *tetherdProc, sid string) error {
	end := time.Now().Add(120 * time.Second)
	for {
		var tr struct {
			Messages []struct {
				PromptID string `json:"promptId"`
				Role     string `json:"role"`
				Text     string `json:"text"`
			} `json:"messages"`
			Turns []benchTurn `json:"turns"`
		}
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+sid+"/transcript", nil, &tr); err != nil {
			return err
		}
		running, said := false, false
		for _, t := range tr.Turns {
			if t.PromptID == "hang" {
				running = t.State == "running"
			}
		}
		for _, m := range tr.Messages {
			if m.PromptID == "hang" && m.Role == "agent" && strings.HasPrefix(m.Text, "hanging") {
				said = true
			}
		}
		if running && said {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("session %s: /hang turn not running with its first chunk after 120s", sid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// verifyInterrupted checks that every mid-turn session's /hang turn is
// interrupted with reason daemon_restart, and that its status is sane.
func (rb *restartRun) verifyInterrupted(ctx context.Context, p *tetherdProc, hung []string) string {
	var mu sync.Mutex
	states := map[string]int{}
	sessState := map[string]int{}
	err := parallel(ctx, 0, len(hung), 4, func(ctx context.Context, i int) error {
		var t benchTurn
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+hung[i]+"/turns/hang", nil, &t); err != nil {
			return err
		}
		var st struct {
			State          string `json:"state"`
			ExecutorStatus string `json:"executorStatus"`
			IsAgentRunning bool   `json:"isAgentRunning"`
			ResumeReason   string `json:"resumeReason"`
		}
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+hung[i]+"/status", nil, &st); err != nil {
			return err
		}
		mu.Lock()
		states[t.State+"/"+t.InterruptReason]++
		sessState[fmt.Sprintf("%s/executor %s/running %v/%s", st.State, st.ExecutorStatus, st.IsAgentRunning, st.ResumeReason)]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		return "verification failed: " + err.Error()
	}
	return fmt.Sprintf("/hang turns: %s; sessions: %s", countsString(states), countsString(sessState))
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// describe summarises what a prepared (stopped) data dir holds, read from
// a throwaway copy of its database.
// It also returns the pids of executor rows left ready/starting: start-up
// reconciliation sends SIGTERM to their process groups.
func (rb *restartRun) describe(dir string) (string, []int) {
	tmp := dir + ".inspect"
	defer os.RemoveAll(tmp)
	if err := copyTree(dir, tmp); err != nil {
		return "inspect: " + err.Error(), nil
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(tmp, "tether.db"))
	if err != nil {
		return "inspect: " + err.Error(), nil
	}
	defer db.Close()
	var stale []int
	if rows, err := db.Query(`SELECT pid FROM executors_running WHERE status IN ('ready', 'starting') AND pid > 0`); err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				stale = append(stale, pid)
			}
		}
		rows.Close()
	}
	group := func(q string) string {
		rows, err := db.Query(q)
		if err != nil {
			return err.Error()
		}
		defer rows.Close()
		var parts []string
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err.Error()
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
		return strings.Join(parts, ", ")
	}
	one := func(q string) int {
		var n int
		_ = db.QueryRow(q).Scan(&n)
		return n
	}
	var size int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "tether.db") {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	return fmt.Sprintf("sessions: %s; executors: %s; turns: %s; %d events, %d messages, %d tasks; tether.db* %.1f MiB",
		group(`SELECT state, count(*) FROM sessions GROUP BY state ORDER BY state`),
		group(`SELECT status || CASE WHEN pid > 0 THEN ' (pid set)' ELSE '' END, count(*) FROM executors_running GROUP BY 1 ORDER BY 1`),
		group(`SELECT state, count(*) FROM turns GROUP BY state ORDER BY state`),
		one(`SELECT count(*) FROM events`), one(`SELECT count(*) FROM messages`), one(`SELECT count(*) FROM tasks`),
		float64(size)/(1<<20)), stale
}

// copyTree copies a directory of regular files (a stopped data dir).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil // sockets and the like: not part of a data dir
	})
}
