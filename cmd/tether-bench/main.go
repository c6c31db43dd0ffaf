// Command tether-bench prints the event-stream figures that need real
// HTTP: isolation from a stalled subscriber (tetherd's SSE endpoint vs
// r3labs/sse/v2's server as the baseline), memory per idle SSE subscriber,
// and catch-up through the SSE endpoint. docs/benchmarks.md records its
// output; the in-package Go benchmarks (internal/events) cover ingest and
// latency without HTTP.
//
//	go run ./cmd/tether-bench [-duration 3s] [-subs 10] [-rate 5000] [-stall-rcvbuf 4096] [-idle 1000] [-catchup 100000] [-only isolation,memory,catchup]
//
// Defaults take about a minute on 2 cores. The restart part (restart.go)
// runs only when asked for: start-up after kill -9 and eager restore, on
// the real tetherd binary ($TETHERD_BIN or a fresh build) and demo agent:
//
//	go run ./cmd/tether-bench -only restart [-restart-sessions 1000] [-restart-midturn 100] [-restart-rounds 3] [-eager-sessions 100] [-eager-concurrency 8,2,16]
//
// So does the hosts part (hosts.go, issue 13): detached sessions through
// kill -9 of tetherd, the host protocol's cost per chunk against
// standalone, and the host's memory:
//
//	go run ./cmd/tether-bench -only hosts [-hosts-sessions 100] [-hosts-stream '/stream 1000000 1 100'] [-hosts-rounds 3] [-hosts-chunks 10000] [-hosts-parallel 4] [-hosts-paced '2000 1 2'] [-hosts-idle 10] [-hosts-parts restart,overhead,rss]
//
// And the cluster part (cluster.go, issue 15): nodes on one PostgreSQL
// server (TETHER_TEST_POSTGRES_URL): takeover after kill -9, commit →
// client latency across nodes, ingest with three nodes against one:
//
//	go run ./cmd/tether-bench -only cluster [-cluster-rounds 3] [-cluster-ttl 10s] [-cluster-sessions 10] [-cluster-levels 1,3,6,12]
//
// And the sandbox part (sandbox.go, issue 31): one binary with agents in
// bubblewrap and without (TETHER_BWRAP=/nonexistent), side by side: agent
// start and CPU per streamed chunk:
//
//	go run ./cmd/tether-bench -only sandbox [-sandbox-rounds 3] [-sandbox-sessions 20] [-sandbox-chunks 100000] [-sandbox-executor standalone]
//
// And the rewind part (rewind.go, issue 32): a fork of a long session with
// a large workspace, and a rewind of many changed files:
//
//	go run ./cmd/tether-bench -only rewind [-rewind-rounds 3] [-rewind-turns 1000] [-rewind-files 10000] [-rewind-changed 1000]
//	go run ./cmd/tether-bench -only inbox [-inbox-rounds 3] [-inbox-sessions 10000] [-inbox-requests 200]
//	go run ./cmd/tether-bench -only history [-history-rounds 3] [-history-turns 10000] [-history-requests 200]
//	go run ./cmd/tether-bench -only webhooks [-webhooks-rounds 3] [-webhooks-sessions 6] [-webhooks-rate-per-session 6] [-webhooks-backlog 20000]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	var (
		dur     = flag.Duration("duration", 3*time.Second, "length of each isolation run (8 runs with -rate, else 4)")
		subs    = flag.Int("subs", 10, "healthy SSE subscribers in the isolation runs")
		rcvBuf  = flag.Int("stall-rcvbuf", 4096, "SO_RCVBUF of the stalled client in bytes; small so the stall takes hold within a short run (0: kernel default, ~4 MB of socket buffers to fill first)")
		rate    = flag.Int("rate", 5000, "events/s of the paced isolation runs (0: full speed only)")
		idle    = flag.Int("idle", 1000, "idle SSE subscribers for the memory figure")
		catchN  = flag.Int("catchup", 100_000, "events a reconnecting subscriber is behind")
		hubBuf  = flag.Int("hub-buffer", 0, "tetherd hub queue length per subscriber in the memory run (0: the daemon's default)")
		heapOut = flag.String("memprofile", "", "memory run: the tetherd child writes heap profiles to FILE.1 (empty), FILE.2 (first wave), FILE.3 (churned)")
		only    = flag.String("only", "isolation,memory,catchup", "comma-separated parts to run: isolation, memory, catchup, restart, hosts, cluster, sandbox, rewind, inbox, webhooks, history (restart, hosts, cluster, sandbox, rewind, inbox, webhooks and history only when named)")
		verbose = flag.Bool("v", false, "print progress to stderr")

		rsSessions = flag.Int("restart-sessions", 1000, "restart: sessions in the crashed data dir")
		rsMidTurn  = flag.Int("restart-midturn", 100, "restart: of which mid-turn at the kill -9")
		rsWave     = flag.Int("restart-wave", 100, "restart: live demo agents at once while preparing the data dir")
		rsCreate   = flag.Int("restart-create", 8, "restart: concurrent session creations while preparing")
		rsRounds   = flag.Int("restart-rounds", 3, "restart: measured restarts of each kind")
		rsEager    = flag.Int("eager-sessions", 100, "restart: resumable sessions for the eager restore (0: skip)")
		rsConc     = flag.String("eager-concurrency", "8,2,16", "restart: --resume-concurrency values of the eager runs")
		rsKeep     = flag.Bool("restart-keep", false, "restart: keep the temp dir (data dirs, daemon logs)")
		rsProf     = flag.String("restart-cpuprofile", "", "restart: also run start-up reconciliation in this process on copies of the crashed data dir, CPU profiles to FILE and FILE.again")
		rsBase     = flag.String("restart-baseline-bin", "", "restart: another tetherd binary (e.g. main's) also started after kill -9 in every round, for a same-run ratio")
	)
	hostsCfg := hostsFlags()
	clusterCfg := clusterFlags()
	sandboxCfg := sandboxFlags()
	rewindCfg := rewindFlags()
	inboxCfg := inboxFlags()
	historyCfg := historyFlags()
	webhooksCfg := webhooksFlags()
	flag.Parse()
	// The store logs slow statements with their full SQL; under load that
	// floods the table output, and the figures say what it would.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role, *idle, *hubBuf, *heapOut); err != nil {
			fmt.Fprintln(os.Stderr, "tether-bench child:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	want := map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		want[strings.TrimSpace(p)] = true
	}
	logf := func(format string, args ...any) {
		if *verbose {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	fmt.Printf("tether-bench: %s, GOMAXPROCS=%d, %s/%s\n\n", runtime.Version(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	failed := false
	check := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "tether-bench:", err)
			failed = true
		}
	}
	stallRcvBuf = *rcvBuf
	if want["isolation"] {
		logf("isolation: %d subscribers, %s per run", *subs, *dur)
		res, err := isolation(ctx, *subs, *rate, *dur)
		check(err)
		if err == nil {
			printIsolation(res, *subs, *dur)
		}
	}
	if want["memory"] {
		var rs []memResult
		for _, role := range []string{"tetherd", "r3labs"} {
			logf("memory: %s with %d idle subscribers", role, *idle)
			r, err := memory(ctx, role, *idle, *hubBuf, *heapOut)
			check(err)
			if err == nil {
				rs = append(rs, r)
			}
		}
		q := "default"
		if *hubBuf > 0 {
			q = fmt.Sprintf("%d events", *hubBuf)
		}
		printMemory(rs, q)
	}
	if want["catchup"] && *catchN > 0 {
		logf("catch-up: %d events", *catchN)
		r, err := catchUp(ctx, *catchN)
		check(err)
		if err == nil {
			printCatchUp(r)
		}
	}
	if want["restart"] {
		cfg := restartConfig{Sessions: *rsSessions, MidTurn: *rsMidTurn, Wave: *rsWave, Create: *rsCreate, Rounds: *rsRounds,
			Eager: *rsEager, Keep: *rsKeep, CPUProfile: *rsProf, BaselineBin: *rsBase, Logf: logf}
		for _, c := range strings.Split(*rsConc, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil && n > 0 {
				cfg.EagerConc = append(cfg.EagerConc, n)
			}
		}
		r, err := restartBench(ctx, cfg)
		check(err)
		if err == nil {
			printRestart(r)
		}
	}
	if want["hosts"] {
		cfg := *hostsCfg
		cfg.Logf = logf
		r, err := hostsBench(ctx, cfg)
		check(err)
		if err == nil {
			printHosts(r)
		}
	}
	if want["cluster"] {
		cfg := *clusterCfg
		cfg.Logf = logf
		r, err := clusterBench(ctx, cfg)
		check(err)
		if err == nil {
			printCluster(r)
		}
	}
	if want["sandbox"] {
		cfg := *sandboxCfg
		cfg.Logf = logf
		r, err := sandboxBench(ctx, cfg)
		check(err)
		if err == nil {
			printSandbox(r)
		}
	}
	if want["rewind"] {
		cfg := *rewindCfg
		cfg.Logf = logf
		r, err := rewindBench(ctx, cfg)
		check(err)
		if err == nil {
			printRewind(r)
		}
	}
	if want["inbox"] {
		cfg := *inboxCfg
		cfg.Logf = logf
		r, err := inboxBench(ctx, cfg)
		check(err)
		if err == nil {
			printInbox(r)
		}
	}
	if want["history"] {
		cfg := *historyCfg
		cfg.Logf = logf
		r, err := historyBench(ctx, cfg)
		check(err)
		if err == nil {
			printHistory(r)
		}
	}
	if want["webhooks"] {
		cfg := *webhooksCfg
		cfg.Logf = logf
		r, err := webhooksBench(ctx, cfg)
		check(err)
		if err == nil {
			printWebhooks(r)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func table() *tabwriter.Writer {
	return tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func msf(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func ratio(a, b float64) string {
	if b == 0 {
		return "∞"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

func printIsolation(rs []isoResult, subs int, dur time.Duration) {
	fmt.Printf("Isolation: %d SSE subscribers over HTTP for %s per run; \"stalled\" adds one client that never reads (SO_RCVBUF %d, 0 = kernel default).\n", subs, dur, stallRcvBuf)
	fmt.Println("writer = durable events/s committed to SQLite and handed to the server's fan-out; latency = submit → received by a healthy subscriber.")
	w := table()
	fmt.Fprintln(w, "load\tclients\tserver\twriter ev/s\tper-sub ev/s\tp50 ms\tp99 ms\tmax ms\tmax gap ms\tfirst id seen\t")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", loadName(r), clientsName(r), r.server, r.writer, r.perSub,
			msf(r.p50), msf(r.p99), msf(r.max), msf(r.maxGap), r.firstID)
	}
	w.Flush()
	for i := 0; i+1 < len(rs); i += 2 {
		t, b := rs[i], rs[i+1]
		fmt.Printf("%s, %s: tetherd/r3labs writer throughput %s, per-subscriber delivery %s, p99 latency %s\n", loadName(t), clientsName(t),
			ratio(t.writer, b.writer), ratio(t.perSub, b.perSub), ratio(float64(t.p99), float64(b.p99)))
		if t.stalled {
			cut := "never"
			if t.cutAfter > 0 {
				cut = fmt.Sprintf("after %s", t.cutAfter.Round(time.Millisecond))
			}
			fmt.Printf("    tetherd's hub dropped the stalled subscriber %s\n", cut)
		}
		if t.lagFrames > 0 || t.reconnect > 0 {
			fmt.Printf("    tetherd: healthy subscribers got %d stream_lagged frames and reconnected %d times (from their cursor)\n", t.lagFrames, t.reconnect)
		}
	}
	if len(rs) >= 2 {
		fmt.Printf("Reconnect with Last-Event-ID set to a log cursor (e.g. from /transcript): tetherd HTTP %d, r3labs/sse HTTP %d\n", rs[0].resume, rs[1].resume)
	}
	fmt.Println()
}

func loadName(r isoResult) string {
	if r.rate == 0 {
		return "full speed"
	}
	return fmt.Sprintf("%d ev/s", r.rate)
}

func clientsName(r isoResult) string {
	if r.stalled {
		return "+1 stalled"
	}
	return "control"
}

func printMemory(rs []memResult, hubQueue string) {
	if len(rs) == 0 {
		return
	}
	fmt.Printf("Memory: idle SSE subscribers, server in a child process, after GC; goal ≤ 24 KiB RSS per subscriber on tetherd, first and churned (issue 36; hub queue %s).\n", hubQueue)
	fmt.Printf("\"first\": %d clients connected to a fresh server; \"churned\": the same number again after the first wave disconnected.\n", rs[0].subs)
	w := table()
	fmt.Fprintln(w, "server\twave\tRSS before MiB\tRSS with MiB\tRSS/sub KiB\theap/sub KiB\tstack/sub KiB\tgoroutines/sub\t")
	for _, r := range rs {
		for _, wave := range []struct {
			name string
			m    memStats
		}{{"first", r.with}, {"churned", r.churned}} {
			fmt.Fprintf(w, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.server, wave.name,
				float64(r.before.RSS)/(1<<20), float64(wave.m.RSS)/(1<<20),
				r.perSub(wave.m, func(m memStats) int64 { return m.RSS })/1024,
				r.perSub(wave.m, func(m memStats) int64 { return m.HeapInuse })/1024,
				r.perSub(wave.m, func(m memStats) int64 { return m.StackInuse })/1024,
				r.perSub(wave.m, func(m memStats) int64 { return int64(m.Goroutines) }))
		}
	}
	w.Flush()
	for _, r := range rs {
		if r.server == "tetherd" {
			worst := max(r.perSub(r.with, func(m memStats) int64 { return m.RSS }), r.perSub(r.churned, func(m memStats) int64 { return m.RSS }))
			fmt.Printf("goal: tetherd ≤ 24 KiB per idle subscriber %s\n", metStr(worst <= 24<<10))
		}
	}
	fmt.Println()
}

func printCatchUp(r catchUpResult) {
	fmt.Printf("Catch-up: a subscriber %d events behind, GET /session/{id}/events?follow=false until replay_complete (log written in %s).\n",
		r.events, r.fill.Round(time.Millisecond))
	w := table()
	fmt.Fprintln(w, "client\tevents\tms\tevents/s\t")
	fmt.Fprintf(w, "minimal\t%d\t%s\t%.0f\t\n", r.events, msf(r.raw), float64(r.events)/r.raw.Seconds())
	fmt.Fprintf(w, "r3labs/sse client\t%d\t%s\t%.0f\t\n", r.r3events, msf(r.r3labs), float64(r.r3events)/r.r3labs.Seconds())
	w.Flush()
	fmt.Printf("r3labs client's Last-Event-ID after the replay: %s\n\n", r.r3lastID)
}
