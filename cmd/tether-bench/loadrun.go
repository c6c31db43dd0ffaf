package main

// One workload's run through a daemon's sessions, measured by SSE clients
// and /proc: what the hosts part's overhead and the sandbox part's CPU per
// chunk share.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// loadRun is one workload on one executor: prompts on n sessions at once,
// measured from the first prompt sent until every session's client saw
// its turn.completed.
type loadRun struct {
	Exec, Name           string
	Sessions, Chunks     int
	Wall                 time.Duration
	Daemon, Host, Agents time.Duration // CPU (utime+stime) during the run
	// Wrap is the part of Agents spent by the processes around the
	// agents (bubblewrap's, in a sandbox): every process of the data dir
	// that is neither the daemon, the host nor a demo agent.
	Wrap time.Duration
	// Lagged counts the streams the daemon cut for a client that fell
	// behind (the client resumed from its cursor; the replay's cost is in
	// the daemon's CPU).
	Lagged int
	Lat    []time.Duration
	// PerSession are the latencies of each session's client, in the
	// order of the sessions measured.
	PerSession            [][]time.Duration
	LoadBefore, LoadAfter string
}

func (r loadRun) perChunk(d time.Duration) float64 {
	return float64(d.Microseconds()) / float64(max(r.Chunks, 1))
}

func (r loadRun) total() time.Duration { return r.Daemon + r.Host + r.Agents }

// procRole names what a process of a data dir is: serve, host or
// demo-agent (tetherd's subcommands), or the name of another program
// (bwrap, around a sandboxed agent).
func procRole(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	args := strings.Split(string(b), "\x00")
	if len(args) < 2 {
		return ""
	}
	if strings.HasPrefix(args[1], "-") {
		return filepath.Base(args[0])
	}
	return args[1]
}

// cpuByRole sums utime+stime of dir's processes per role.
func cpuByRole(dir string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, pid := range agentProcs(dir) {
		out[procRole(pid)] += procCPU(pid)
	}
	return out
}

// loadClient follows one session during a workload: it counts the chunks
// of prompt pid, times stamped ones, and ends at the turn's end.
type loadClient struct {
	pid    string
	chunks int
	lat    []time.Duration
	ended  string // the turn's terminal event
	lastID string // the last event id seen, to resume from
	lagged int    // streams the daemon ended with stream_lagged
}

// follow reads one stream of the session's events (from c.lastID, if
// any) until the turn's end or the stream's; replayed is called at the
// end of the replay. It reports whether the daemon cut the stream for
// lagging: the client then resumes from its cursor, as a browser would.
func (c *loadClient) follow(ctx context.Context, url string, replayed func()) (lagged bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if c.lastID != "" {
		req.Header.Set("Last-Event-ID", c.lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	err = readFrames(resp.Body, func(fr *sseFrame, now time.Time) bool {
		switch {
		case fr.Event == "replay_complete":
			replayed()
			return true
		case fr.Event == "stream_lagged":
			lagged = true
			return false
		case fr.ID != "":
			c.lastID = fr.ID
		}
		return c.frame(fr, now)
	})
	return lagged, err
}

func (c *loadClient) frame(fr *sseFrame, now time.Time) bool {
	switch fr.Event {
	case "message.chunk", "message.added", "turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted":
	default:
		return true
	}
	if !bytes.Contains(fr.Data, []byte(`"promptId":"`+c.pid+`"`)) {
		return true
	}
	switch {
	case fr.Event == "message.added" && !bytes.Contains(fr.Data, []byte(`"role":"agent"`)):
		return true // the prompt itself
	case fr.Event != "message.chunk" && fr.Event != "message.added":
		c.ended = fr.Event
		return false
	}
	c.chunks++
	if at, ok := stampOf(fr.Data); ok {
		c.lat = append(c.lat, time.Duration(now.UnixNano()-at))
	}
	return true
}

// measureLoad subscribes to each session (waiting for its replay to
// end), prompts them all at once and waits for every turn's end; CPU is
// read before the prompts and 200 ms after the last end (acks and
// commits that trail the turn).
func (rb *restartRun) measureLoad(ctx context.Context, p *tetherdProc, dir string, ids []string, prompt, pid string) (loadRun, error) {
	r := loadRun{Sessions: len(ids), LoadBefore: loadavg()}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	clients := make([]*loadClient, len(ids))
	errs := make([]error, len(ids))
	var ready, done sync.WaitGroup
	for i, sid := range ids {
		clients[i] = &loadClient{pid: pid}
		ready.Add(1)
		done.Go(func() {
			once := sync.OnceFunc(ready.Done)
			defer once()
			c := clients[i]
			for {
				lagged, err := c.follow(ctx, p.base+"/session/"+sid+"/events", once)
				if c.ended != "" {
					return
				}
				if !lagged || ctx.Err() != nil {
					errs[i] = fmt.Errorf("session %s: stream ended before the turn did: %v", sid, err)
					return
				}
				c.lagged++
			}
		})
	}
	ready.Wait()
	cpu0 := cpuByRole(dir)
	t0 := time.Now()
	err := parallel(ctx, 0, len(ids), len(ids), func(ctx context.Context, i int) error {
		_, err := rb.api(ctx, p, http.MethodPost, "/session/"+ids[i]+"/prompt", map[string]any{"prompt": textPrompt(prompt), "promptId": pid}, nil)
		return err
	})
	if err != nil {
		cancel()
	}
	done.Wait()
	r.Wall = time.Since(t0)
	time.Sleep(200 * time.Millisecond)
	cpu1 := cpuByRole(dir)
	r.LoadAfter = loadavg()
	if err := errors.Join(append(errs, err)...); err != nil {
		return r, err
	}
	r.Daemon, r.Host = cpu1["serve"]-cpu0["serve"], cpu1["host"]-cpu0["host"]
	for role, d := range cpu1 {
		switch role {
		case "serve", "host":
		case "demo-agent":
			r.Agents += d - cpu0[role]
		default:
			r.Wrap += d - cpu0[role]
		}
	}
	r.Agents += r.Wrap
	for _, c := range clients {
		if c.ended != "turn.completed" {
			return r, fmt.Errorf("turn %s ended with %s", pid, c.ended)
		}
		r.Chunks += c.chunks
		r.Lagged += c.lagged
		r.Lat = append(r.Lat, c.lat...)
		r.PerSession = append(r.PerSession, c.lat)
	}
	return r, nil
}
