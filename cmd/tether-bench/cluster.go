package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cluster part (issue 15): several tetherd nodes on one PostgreSQL
// database. Takeover time after kill -9 of the node that owns sessions,
// the latency from an event's commit on one node to a client of another,
// and ingest with three nodes against one, on the real binary and demo
// agent. It needs a PostgreSQL server whose role may create databases:
//
//	TETHER_TEST_POSTGRES_URL=postgres://... go run ./cmd/tether-bench -only cluster [-cluster-rounds 3] [-cluster-ttl 10s]

type clusterConfig struct {
	Rounds   int
	TTL      time.Duration
	Sessions int    // sessions taken over at once
	Chunks   int    // chunks a latency turn streams
	Flood    string // the ingest prompt
	Levels   []int  // sessions flooding at once, one ingest run each
	Logf     func(string, ...any)
}

func clusterFlags() *clusterConfig {
	c := &clusterConfig{}
	flag.IntVar(&c.Rounds, "cluster-rounds", 3, "cluster: rounds of each figure (median reported)")
	flag.DurationVar(&c.TTL, "cluster-ttl", 10*time.Second, "cluster: --lease-ttl of the nodes")
	flag.IntVar(&c.Sessions, "cluster-sessions", 10, "cluster: streaming sessions on the node killed")
	flag.IntVar(&c.Chunks, "cluster-chunks", 2000, "cluster: chunks of the latency turn, paced")
	flag.StringVar(&c.Flood, "cluster-flood", "/flood 20000", "cluster: the ingest turn's prompt")
	flag.Func("cluster-levels", "cluster: comma-separated numbers of sessions flooding at once, one ingest run each (default 1,3,6,12)", func(v string) error {
		levels, err := intList(v)
		c.Levels = levels
		return err
	})
	c.Levels = []int{1, 3, 6, 12}
	return c
}

type clusterResult struct {
	Takeover    []time.Duration // kill -9 → every session owned elsewhere, per round
	Interrupted int             // turns interrupted by the takeovers (want 0)
	LatP50      []time.Duration // commit on the owner → a client of another node
	LatP99      []time.Duration
	OwnP99      []time.Duration           // the same, a client of the owner node (baseline)
	Extra       []time.Duration           // p99 of another node's client's delay behind the owner's
	Ingest      map[ingestKey][]ingestRun // per node count and level, per round
	Loads       []string
	Cfg         clusterConfig
}

// clusterBench runs the cluster part.
func clusterBench(ctx context.Context, cfg clusterConfig) (res clusterResult, err error) {
	res.Cfg = cfg
	res.Ingest = map[ingestKey][]ingestRun{}
	admin := os.Getenv("TETHER_TEST_POSTGRES_URL")
	if admin == "" {
		return res, fmt.Errorf("cluster: set TETHER_TEST_POSTGRES_URL to a PostgreSQL server whose role may create databases")
	}
	rb, done, err := newRun("cluster", restartConfig{Logf: cfg.Logf}, false)
	if err != nil {
		return res, err
	}
	defer done()
	if err := rb.prepare(ctx); err != nil {
		return res, err
	}
	load := func(what string) { res.Loads = append(res.Loads, what+": "+loadavg()) }
	load("start")
	for round := range cfg.Rounds {
		cl, err := newBenchCluster(ctx, rb, admin, fmt.Sprintf("r%d", round), cfg.TTL, 3)
		if err != nil {
			return res, err
		}
		took, interrupted, p50, p99, own, err := cl.failoverRound(ctx, cfg)
		cl.stop()
		if err != nil {
			return res, err
		}
		res.Takeover = append(res.Takeover, took)
		res.Interrupted += interrupted
		res.LatP50, res.LatP99, res.OwnP99 = append(res.LatP50, p50), append(res.LatP99, p99), append(res.OwnP99, own)
		res.Extra = append(res.Extra, cl.extraP99)
		cfg.Logf("cluster: round %d takeover %s, latency p50 %s p99 %s", round, took, p50, p99)
		for _, n := range []int{1, 3} {
			if err := ingestRound(ctx, rb, admin, fmt.Sprintf("i%d_%d", round, n), n, cfg, &res); err != nil {
				return res, err
			}
		}
		load(fmt.Sprintf("round %d", round))
	}
	return res, nil
}

// benchCluster is one database and its nodes, sharing a token (the
// bench's) and a detached host directory.
type benchCluster struct {
	// extraP99 is the last latency round's p99 of the time a client of
	// another node got each event after a client of the owner did.
	extraP99 time.Duration
	rb       *restartRun
	db       string
	drop     func()
	nodes    []*tetherdProc
	ids      []string
}

func newBenchCluster(ctx context.Context, rb *restartRun, admin, name string, ttl time.Duration, n int) (*benchCluster, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, err
	}
	dbName := "tether_bench_" + name + "_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	_ = conn.Close(ctx)
	u := strings.Replace(admin, "/"+dbPath(admin)+"?", "/"+dbName+"?", 1)
	c := &benchCluster{rb: rb, db: u, drop: func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	}}
	hostDir := filepath.Join(rb.root, name, "host")
	for i := range n {
		addr, err := freeLoopback()
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("n%d", i+1)
		dir := filepath.Join(rb.root, name, id)
		p, err := rb.launchAt(dir, addr, name+"-"+id, "--database", u, "--node-id", id, "--lease-ttl", ttl.String(),
			"--executor", "detached", "--host-dir", hostDir, "--log-level", "warn")
		if err != nil {
			return nil, err
		}
		if _, err := rb.waitHealthy(ctx, p); err != nil {
			return nil, err
		}
		c.nodes, c.ids = append(c.nodes, p), append(c.ids, id)
	}
	return c, nil
}

// dbPath is the database name of a postgres URL.
func dbPath(u string) string {
	s := u[strings.Index(u, "://")+3:]
	s = s[strings.Index(s, "/")+1:]
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	return s
}

func (c *benchCluster) stop() {
	for _, p := range c.nodes {
		select {
		case <-p.done:
		default:
			_ = p.term()
		}
	}
	for _, dir := range []string{filepath.Dir(c.nodes[0].dir)} {
		c.rb.sweep(dir)
	}
	c.drop()
}

// failoverRound: sessions stream on node 1 (paced), a client follows one
// of them on node 2; node 1 is killed; the round returns the time until
// every session is owned by another node, the turns interrupted (0 when
// the takeovers were clean), and the commit → client latency measured on
// node 2 before the kill.
func (c *benchCluster) failoverRound(ctx context.Context, cfg clusterConfig) (took time.Duration, interrupted int, p50, p99, ownP99 time.Duration, err error) {
	owner, other := c.nodes[0], c.nodes[1]
	var sids []string
	for i := range cfg.Sessions {
		sid, err := c.rb.createFinishedOn(ctx, owner, i, "detached")
		if err != nil {
			return 0, 0, 0, 0, 0, err
		}
		sids = append(sids, sid)
	}
	// The latency turn, followed from the other node, and from the owner
	// itself for a baseline of the same run.
	lat := sids[0]
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	far, farDone := followSeqs(fctx, other.base, lat)
	near, nearDone := followSeqs(fctx, owner.base, lat)
	time.Sleep(200 * time.Millisecond) // the streams are open before the turn
	if _, err := c.rb.api(ctx, owner, http.MethodPost, "/session/"+lat+"/prompt",
		map[string]any{"prompt": textPrompt(fmt.Sprintf("/stream %d 1 2", cfg.Chunks)), "promptId": "lat"}, nil); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	if err := c.rb.waitTurn(ctx, other, lat, "lat", func(s string) (bool, error) { return s == "completed", nil }); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	time.Sleep(200 * time.Millisecond) // the last chunks reach both clients
	cancel()
	<-farDone
	<-nearDone
	if p50, p99, err = c.commitLatency(ctx, lat, far); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	if _, ownP99, err = c.commitLatency(ctx, lat, near); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	c.extraP99 = extraLatency(near, far)
	// The failover: every session streams on node 1, which dies.
	for _, sid := range sids {
		if _, err := c.rb.api(ctx, owner, http.MethodPost, "/session/"+sid+"/prompt",
			map[string]any{"prompt": textPrompt("/stream 100000 100 20"), "promptId": "long"}, nil); err != nil {
			return 0, 0, 0, 0, 0, err
		}
	}
	time.Sleep(time.Second)
	owner.kill9()
	killed := time.Now()
	for _, sid := range sids {
		for {
			var st struct {
				Node string `json:"node"`
			}
			if _, err := c.rb.api(ctx, other, http.MethodGet, "/session/"+sid+"/status", nil, &st); err == nil && st.Node != "" && st.Node != c.ids[0] {
				break
			}
			if time.Since(killed) > 3*cfg.TTL+30*time.Second {
				return 0, 0, 0, 0, 0, fmt.Errorf("cluster: session %s not taken over within %s", sid, time.Since(killed))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	took = time.Since(killed)
	for _, sid := range sids {
		var turn struct {
			State string `json:"state"`
		}
		if _, err := c.rb.api(ctx, other, http.MethodGet, "/session/"+sid+"/turns/long", nil, &turn); err == nil && turn.State == "interrupted" {
			interrupted++
		}
	}
	return took, interrupted, p50, p99, ownP99, nil
}

// seqTimes are the arrival times of a session stream's events by seq.
type seqTimes struct {
	mu sync.Mutex
	at map[int64]time.Time
}

// followSeqs follows a session's stream on base until ctx ends, noting
// when each event arrives.
func followSeqs(ctx context.Context, base, sid string) (*seqTimes, <-chan struct{}) {
	st := &seqTimes{at: map[int64]time.Time{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/session/"+sid+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				if _, seq, ok := strings.Cut(id, ":"); ok {
					n, _ := strconv.ParseInt(seq, 10, 64)
					st.mu.Lock()
					st.at[n] = time.Now()
					st.mu.Unlock()
				}
			}
		}
	}()
	return st, done
}

// commitLatency is, over the latency turn's events, the time from each
// event's commit time in the database to its arrival at the client.
func (c *benchCluster) commitLatency(ctx context.Context, sid string, arrived *seqTimes) (p50, p99 time.Duration, err error) {
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT seq, created_at FROM events WHERE session_id = $1 AND type = 'message.chunk'`, sid)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	arrived.mu.Lock()
	defer arrived.mu.Unlock()
	var lats []time.Duration
	for rows.Next() {
		var seq int64
		var at string
		if err := rows.Scan(&seq, &at); err != nil {
			return 0, 0, err
		}
		t0, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return 0, 0, err
		}
		if t1, ok := arrived.at[seq]; ok {
			lats = append(lats, t1.Sub(t0))
		}
	}
	if len(lats) == 0 {
		return 0, 0, fmt.Errorf("cluster: no chunk of %s arrived", sid)
	}
	slices.Sort(lats)
	return lats[(len(lats)-1)/2], lats[(len(lats)*99-1)/100], rows.Err()
}

func printCluster(r clusterResult) {
	fmt.Printf("Cluster: nodes on one PostgreSQL, the detached runtime, --lease-ttl %s, %d rounds (median).\n", r.Cfg.TTL, r.Cfg.Rounds)
	w := table()
	fmt.Fprintln(w, "figure\tmedian\trounds\tgoal\t")
	fmt.Fprintf(w, "takeover after kill -9 (%d streaming sessions), ms\t%s\t%s\t≤ %s\t\n", r.Cfg.Sessions, msf(medianDur(r.Takeover)), durList(r.Takeover), r.Cfg.TTL+time.Second)
	fmt.Fprintf(w, "commit → client on another node, p50 ms\t%s\t%s\t\t\n", msf(medianDur(r.LatP50)), durList(r.LatP50))
	fmt.Fprintf(w, "commit → client on another node, p99 ms\t%s\t%s\t≤ 20 ms\t\n", msf(medianDur(r.LatP99)), durList(r.LatP99))
	fmt.Fprintf(w, "commit → client on the owner node, p99 ms (baseline)\t%s\t%s\t\t\n", msf(medianDur(r.OwnP99)), durList(r.OwnP99))
	fmt.Fprintf(w, "another node's client behind the owner's, p99 ms\t%s\t%s\t\t\n", msf(medianDur(r.Extra)), durList(r.Extra))
	w.Flush()
	fmt.Printf("turns interrupted by the takeovers: %d (want 0)\n", r.Interrupted)
	printIngest(r)
	for _, l := range r.Loads {
		fmt.Println("loadavg", l)
	}
	fmt.Println()
}

// floats lists rates, rounded.
func floats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, ", ")
}

// extraLatency is the p99, over the events both clients got, of how much
// later the client of another node got each than the owner's client.
func extraLatency(near, far *seqTimes) time.Duration {
	near.mu.Lock()
	defer near.mu.Unlock()
	far.mu.Lock()
	defer far.mu.Unlock()
	var d []time.Duration
	for seq, t := range far.at {
		if t0, ok := near.at[seq]; ok {
			d = append(d, t.Sub(t0))
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)*99-1)/100]
}
