package main

// The hosts part's overhead and RSS figures (see hosts.go; the workload
// runs themselves are in loadrun.go).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sseFrame is one frame of a stream as readFrames sees it; Data is valid
// only during the callback.
type sseFrame struct {
	ID    string
	Seq   int64 // the number after the id's last ':' (0: no id)
	Event string
	Data  []byte
}

// readFrames calls fn with every frame of r and the time its last line
// arrived, until fn returns false or the stream ends. It allocates little,
// so that on 2 cores the clients take little CPU from what they measure.
func readFrames(r io.Reader, fn func(fr *sseFrame, now time.Time) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var fr sseFrame
	var data, long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if fr.Event != "" || len(data) > 0 {
				fr.Data = data
				if !fn(&fr, time.Now()) {
					return nil
				}
			}
			fr, data = sseFrame{}, data[:0]
		case bytes.HasPrefix(line, []byte("id: ")):
			fr.ID = string(line[4:])
			if i := strings.LastIndexByte(fr.ID, ':'); i >= 0 {
				fr.Seq, _ = strconv.ParseInt(fr.ID[i+1:], 10, 64)
			}
		case bytes.HasPrefix(line, []byte("event: ")):
			fr.Event = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[6:]...)
		}
	}
}

// stampOf extracts the send time from a /stamped chunk's JSON
// ("text":"chunk I NS\n").
func stampOf(data []byte) (int64, bool) {
	const key = `"text":"chunk `
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(key):]
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		return 0, false
	}
	rest = rest[sp+1:]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil && j > 0
}

// overhead runs every workload on both executors (and the baseline's).
// Their daemons run side by side, idle but for the one measured, and
// each workload runs on them back to back, in an order that alternates by
// workload and by round: the machine's speed drifts over tens of seconds
// here, and a round that ran all of one executor's workloads, then all of
// the other's, measured the drift as much as the executors.
func (hb *hostBench) overhead(ctx context.Context, round int) ([]loadRun, error) {
	execs := []string{"standalone", "detached"}
	if hb.cfg.BaselineBin != "" {
		execs = append(execs, "baseline")
	}
	if round%2 == 1 {
		slices.Reverse(execs)
	}
	var targets []*overheadTarget
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	for _, x := range execs {
		t, err := hb.overheadTarget(ctx, x, round)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x, err)
		}
		targets = append(targets, t)
	}
	time.Sleep(300 * time.Millisecond)
	cfg := hb.cfg
	full, paced := fmt.Sprintf("/stream %d", cfg.Chunks), "/stamped "+cfg.Paced
	work := []struct {
		name, prompt string
		n            int
	}{{"full speed", full, 1}, {"full speed", full, cfg.Parallel}, {"paced", paced, 1}, {"paced", paced, cfg.Parallel}}
	var out []loadRun
	for i, w := range work {
		order := slices.Clone(targets)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			r, err := hb.rb.measureLoad(ctx, t.p, t.dir, t.ids[:w.n], w.prompt, fmt.Sprintf("w%d", i))
			if err != nil {
				return nil, fmt.Errorf("%s, %s on %d sessions: %w (log %s)", t.x, w.name, w.n, err, t.p.logPath)
			}
			r.Exec, r.Name = t.x, w.name
			cfg.Logf("hosts: overhead round %d %s %s ×%d: %d chunks in %s, CPU daemon %s host %s agents %s", round+1, t.x, w.name, w.n,
				r.Chunks, r.Wall.Round(time.Millisecond), r.Daemon, r.Host, r.Agents)
			out = append(out, r)
		}
	}
	for _, t := range targets {
		if t.x == "standalone" {
			ab, err := hb.sideBySide(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("side by side: %w", err)
			}
			out = append(out, ab)
		}
	}
	return out, nil
}

// overheadTarget is one executor's daemon of an overhead round, with its
// sessions (each has had a turn, so its agent runs).
type overheadTarget struct {
	x    string
	dir  string
	p    *tetherdProc
	ids  []string
	stop func()
}

// overheadTarget starts executor x's daemon ("baseline": the baseline
// binary's detached runtime) and its sessions.
func (hb *hostBench) overheadTarget(ctx context.Context, x string, round int) (*overheadTarget, error) {
	rb, cfg := hb.rb, hb.cfg
	t := &overheadTarget{x: x, dir: filepath.Join(rb.root, fmt.Sprintf("overhead-%d-%s", round+1, x))}
	runtime := x
	if x == "baseline" {
		bin := rb.bin
		rb.bin, runtime = cfg.BaselineBin, "detached"
		defer func() { rb.bin = bin }()
	}
	var err error
	if t.p, t.stop, err = hb.start(ctx, t.dir, "overhead-"+x, runtime); err != nil {
		return nil, err
	}
	t.ids = make([]string, cfg.Parallel)
	for i := range t.ids {
		if t.ids[i], err = rb.createFinished(ctx, t.p, i); err != nil {
			t.stop()
			return nil, err
		}
	}
	return t, nil
}

// start launches a daemon on dir with executor x and waits until it is
// healthy; stop ends it and every process of dir (its host among them).
func (hb *hostBench) start(ctx context.Context, dir, name, x string) (p *tetherdProc, stop func(), err error) {
	if p, err = hb.rb.launch(dir, name, "--executor", x); err != nil {
		return nil, nil, err
	}
	stop = func() { _ = p.term(); hb.rb.sweep(dir) }
	if _, err := hb.rb.waitHealthy(ctx, p); err != nil {
		stop()
		return nil, nil, err
	}
	return p, stop, nil
}

// rssRun is the memory of one executor's processes with idle sessions.
type rssRun struct {
	Exec                  string
	One, All              rssSnap // after the first session, after all
	LoadBefore, LoadAfter string
}

// rssSnap is VmRSS per role (bytes), agents also one by one, and the
// RssAnon part of the host's: memory of its own, where VmRSS also counts
// the pages of the tetherd binary that every process of it shares.
type rssSnap struct {
	Daemon, Host, HostAnon int64
	Agents                 []int64
}

// procStatus reads a "Name: N kB" line of /proc/<pid>/status, in bytes.
func procStatus(pid int, name string) int64 {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, name+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func rssOf(dir string) rssSnap {
	var s rssSnap
	for _, pid := range agentProcs(dir) {
		switch procRole(pid) {
		case "serve":
			s.Daemon += procStatus(pid, "VmRSS")
		case "host":
			s.Host += procStatus(pid, "VmRSS")
			s.HostAnon += procStatus(pid, "RssAnon")
		case "demo-agent":
			s.Agents = append(s.Agents, procStatus(pid, "VmRSS"))
		}
	}
	return s
}

// rss creates cfg.Idle sessions whose first turn completed (their agents
// then idle) and reads VmRSS after the first and after the last.
func (hb *hostBench) rss(ctx context.Context, x string, round int) (rssRun, error) {
	rb, cfg := hb.rb, hb.cfg
	r := rssRun{Exec: x, LoadBefore: loadavg()}
	dir := filepath.Join(rb.root, fmt.Sprintf("rss-%d-%s", round+1, x))
	p, stop, err := hb.start(ctx, dir, "rss-"+x, x)
	if err != nil {
		return r, err
	}
	defer stop()
	for i := range cfg.Idle {
		if _, err := rb.createFinished(ctx, p, i); err != nil {
			return r, err
		}
		if i == 0 {
			time.Sleep(time.Second)
			r.One = rssOf(dir)
		}
	}
	time.Sleep(time.Second)
	r.All, r.LoadAfter = rssOf(dir), loadavg()
	return r, nil
}

func pctl(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func printOverhead(r hostsResult) {
	if len(r.Overhead) == 0 {
		return
	}
	c := r.Cfg
	fmt.Printf("Overhead: the same prompts through --executor standalone and detached, their daemons side by side, each workload on one then the other (order alternating by workload and round); full speed = /stream %d per session, paced = /stamped %s per session.\n", c.Chunks, c.Paced)
	fmt.Println("Wall = first prompt sent → every client saw its turn.completed; CPU = utime+stime of the daemon, the host and the agents (with the bubblewrap processes of a sandboxed agent) from before the prompts to 200 ms after the end; latency = the agent's stamp (just before it writes the chunk) → the SSE client read it.")
	w := table()
	fmt.Fprintln(w, "round\tworkload\tsessions\texecutor\tchunks\twall ms\tchunks/s\tdaemon µs/chunk\thost µs/chunk\tagents µs/chunk\ttotal µs/chunk\tp50 ms\tp99 ms\tmax ms\tloadavg\t")
	type key struct {
		name string
		n    int
	}
	ratios, base, added, added50 := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	var keys []key
	for i, runs := range r.Overhead {
		by := map[key]map[string]loadRun{}
		for _, x := range runs {
			if x.Name == sideBySideName {
				continue // printSideBySide
			}
			k := key{x.Name, x.Sessions}
			if by[k] == nil {
				by[k] = map[string]loadRun{}
				if i == 0 {
					keys = append(keys, k)
				}
			}
			by[k][x.Exec] = x
			lat := []string{"", "", ""}
			if len(x.Lat) > 0 {
				lat = []string{msf(pctl(x.Lat, 0.5)), msf(pctl(x.Lat, 0.99)), msf(pctl(x.Lat, 1))}
			}
			fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%d\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t\n", i+1, x.Name, x.Sessions, x.Exec, x.Chunks, msf(x.Wall),
				float64(x.Chunks)/x.Wall.Seconds(), x.perChunk(x.Daemon), x.perChunk(x.Host), x.perChunk(x.Agents), x.perChunk(x.total()),
				lat[0], lat[1], lat[2], x.LoadBefore+" → "+x.LoadAfter)
		}
		for k, m := range by {
			s, d := m["standalone"], m["detached"]
			ratios[k] = append(ratios[k], d.perChunk(d.total())/s.perChunk(s.total()))
			if b, ok := m["baseline"]; ok {
				base[k] = append(base[k], b.perChunk(b.total())/s.perChunk(s.total()))
			}
			if len(d.Lat) > 0 {
				ms := func(q float64) float64 { return float64(pctl(d.Lat, q)-pctl(s.Lat, q)) / float64(time.Millisecond) }
				added[k], added50[k] = append(added[k], ms(0.99)), append(added50[k], ms(0.5))
			}
		}
	}
	w.Flush()
	fmt.Println("detached vs standalone, median of the per-round figures (goals: CPU per chunk ≤ 1.2×, p99 latency ≤ 1 ms added):")
	for _, k := range keys {
		line := fmt.Sprintf("  %s, %d session(s): CPU per chunk %.2f× (%s)", k.name, k.n, medianF(ratios[k]), metStr(medianF(ratios[k]) <= 1.2))
		if a, ok := added[k]; ok {
			line += fmt.Sprintf("; p99 added %.2f ms (%s), p50 added %.2f ms", medianF(a), metStr(medianF(a) <= 1), medianF(added50[k]))
		}
		if b, ok := base[k]; ok {
			line += fmt.Sprintf("; baseline bin's detached: %.2f×", medianF(b))
		}
		fmt.Println(line)
	}
	fmt.Println()
}

func printRSS(r hostsResult) {
	if len(r.RSS) == 0 {
		return
	}
	fmt.Printf("RSS: VmRSS from /proc after 1 and %d idle sessions (each had one /echo turn), 1 s after the last was created.\n", r.Cfg.Idle)
	w := table()
	fmt.Fprintln(w, "round\texecutor\tsessions\tdaemon MiB\thost MiB\thost RssAnon MiB\tagents MiB (sum)\tper agent MiB (median)\tloadavg\t")
	var hostAll, hostOne, anonAll []float64
	for i, rs := range r.RSS {
		for _, x := range rs {
			for _, s := range []struct {
				n    int
				snap rssSnap
			}{{1, x.One}, {r.Cfg.Idle, x.All}} {
				var sum int64
				var per []float64
				for _, a := range s.snap.Agents {
					sum += a
					per = append(per, float64(a))
				}
				fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%s\t%s (%d)\t%s\t%s\t\n", i+1, x.Exec, s.n, mib(s.snap.Daemon), mib(s.snap.Host), mib(s.snap.HostAnon),
					mib(sum), len(s.snap.Agents), mib(int64(medianF(per))), x.LoadBefore+" → "+x.LoadAfter)
			}
			if x.Exec == "detached" {
				hostOne, hostAll = append(hostOne, float64(x.One.Host)), append(hostAll, float64(x.All.Host))
				anonAll = append(anonAll, float64(x.All.HostAnon))
			}
		}
	}
	w.Flush()
	if len(hostAll) > 0 && r.Cfg.Idle > 1 {
		fmt.Printf("host with %d idle sessions: median VmRSS %s MiB, RssAnon %s MiB (1 session: %s MiB; %.0f KiB per further session)\n\n", r.Cfg.Idle,
			mib(int64(medianF(hostAll))), mib(int64(medianF(anonAll))), mib(int64(medianF(hostOne))), (medianF(hostAll)-medianF(hostOne))/float64(r.Cfg.Idle-1)/1024)
	}
}
