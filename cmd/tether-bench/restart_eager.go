package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// The restart bench's eager part: sessions restored at start-up
// (--resume-on-start eager) and how soon each streams again.

// prepareEager builds a data dir with cfg.Eager resumable sessions: each
// had one completed turn, then the daemon stopped cleanly (SIGTERM), which
// stops the agents. It returns the sessions and the global event head
// before the stop (eager runs stream from there).
func (rb *restartRun) prepareEager(ctx context.Context, dir string) ([]string, string, error) {
	p, err := rb.launch(dir, "prep-eager")
	if err != nil {
		return nil, "", err
	}
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return nil, "", err
	}
	ids := make([]string, rb.cfg.Eager)
	err = parallel(ctx, 0, len(ids), rb.cfg.Create, func(ctx context.Context, i int) error {
		id, err := rb.createFinished(ctx, p, i)
		ids[i] = id
		return err
	})
	if err != nil {
		p.kill9()
		return nil, "", err
	}
	head, err := rb.globalHead(ctx, p)
	if err != nil {
		p.kill9()
		return nil, "", err
	}
	if err := p.term(); err != nil {
		return nil, "", err
	}
	rb.sweep(dir)
	return ids, head, nil
}

// globalHead is the cursor of the global stream's head.
func (rb *restartRun) globalHead(ctx context.Context, p *tetherdProc) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/events?follow=false&types=session.closed", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := rb.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var head string
	err = readFrames(resp.Body, func(fr *sseFrame, _ time.Time) bool {
		if fr.Event == "replay_complete" {
			var c struct {
				Cursor string `json:"cursor"`
			}
			_ = json.Unmarshal(fr.Data, &c)
			head = c.Cursor
			return false
		}
		return true
	})
	if head == "" {
		return "", fmt.Errorf("no replay_complete on GET /events (HTTP %d): %v", resp.StatusCode, err)
	}
	return head, nil
}

// eager starts a daemon in eager mode on dir and times it until every
// session in ids has sent session.resumed (its agent is then running: the
// actor holds the connection before it submits the event), then checks
// each session's status.
func (rb *restartRun) eager(ctx context.Context, dir string, ids []string, head string, conc int) (eagerResult, error) {
	r := eagerResult{Conc: conc, Strategies: map[string]int{}, LoadBefore: loadavg()}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	p, err := rb.launch(dir, fmt.Sprintf("eager-c%d", conc), "--resume-on-start", "eager", "--resume-concurrency", strconv.Itoa(conc))
	if err != nil {
		return r, err
	}
	defer func() {
		_ = p.term()
		rb.sweep(dir)
	}()
	if r.Health, err = rb.waitHealthy(ctx, p); err != nil {
		return r, err
	}
	r.Reconciled = p.reconciled()
	sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	q := url.Values{"cursor": {head}, "types": {"session.resumed,session.executor_status"}}
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, p.base+"/events?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return r, fmt.Errorf("GET /events: HTTP %d: %s", resp.StatusCode, b)
	}
	resumed := map[string]bool{}
	err = readFrames(resp.Body, func(fr *sseFrame, _ time.Time) bool {
		var m struct {
			SessionID string `json:"sessionId"`
			Strategy  string `json:"strategy"`
			Status    string `json:"status"`
		}
		if json.Unmarshal(fr.Data, &m) != nil || !want[m.SessionID] {
			return true
		}
		switch fr.Event {
		case "session.resumed":
			if !resumed[m.SessionID] {
				resumed[m.SessionID] = true
				d := time.Since(p.started)
				if len(resumed) == 1 {
					r.First = d
				}
				r.All = d
				r.Strategies[m.Strategy]++
			}
		case "session.executor_status":
			if m.Status == "error" {
				r.Errors++
			}
		}
		return len(resumed) < len(want)
	})
	r.Resumed = len(resumed)
	if len(resumed) < len(want) {
		return r, fmt.Errorf("%d of %d sessions resumed before the stream ended (%v); %d executor errors; log %s",
			len(resumed), len(want), err, r.Errors, p.logPath)
	}
	r.LoadAfter = loadavg()
	for _, pid := range agentProcs(dir) {
		cpu := procCPU(pid)
		if pid == p.cmd.Process.Pid {
			r.DaemonCPU = cpu
		} else {
			r.AgentsCPU += cpu
			r.Agents++
		}
	}
	var running atomic.Int64
	err = parallel(ctx, 0, len(ids), 4, func(ctx context.Context, i int) error {
		var st struct {
			IsAgentRunning bool `json:"isAgentRunning"`
		}
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+ids[i]+"/status", nil, &st); err != nil {
			return err
		}
		if st.IsAgentRunning {
			running.Add(1)
		}
		return nil
	})
	r.Running = int(running.Load())
	rb.cfg.Logf("restart: eager c=%d: health %s, all %d resumed %s, %d running", conc, r.Health, r.Resumed, r.All, r.Running)
	return r, err
}
