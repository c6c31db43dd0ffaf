package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/tether/tether/internal/events"
)

// childEnv selects the child role: the memory figure is taken in a
// separate process, so the 1,000 clients' memory is not counted.
const childEnv = "TETHER_BENCH_CHILD"

// perSession bounds subscribers per session below the daemon's default
// limit (64), so the memory run uses the daemon's real hub settings.
const perSession = 20

// childHello is what a child prints once it serves.
type childHello struct {
	Streams []string    `json:"streams"`
	Header  http.Header `json:"header"`
	Marker  string      `json:"marker"` // what a connected client reads before going idle
}

// memStats is a child's memory after a GC.
type memStats struct {
	RSS        int64 `json:"rss"` // VmRSS, bytes
	HeapInuse  int64 `json:"heapInuse"`
	StackInuse int64 `json:"stackInuse"`
	Goroutines int   `json:"goroutines"`
}

// runChild serves SSE until stdin closes, answering "stats" lines.
func runChild(role string, subs, hubBuffer int, heapOut string) error {
	ctx := context.Background()
	var hello childHello
	switch role {
	case "tetherd":
		dir, err := os.MkdirTemp("", "tether-bench-mem-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		d, err := startDaemon(ctx, dir, (subs+perSession-1)/perSession, events.HubConfig{Buffer: hubBuffer})
		if err != nil {
			return err
		}
		defer d.Close()
		for _, sid := range d.Sessions {
			hello.Streams = append(hello.Streams, d.streamURL(sid))
		}
		hello.Header = http.Header{"Authorization": {"Bearer " + token}}
		hello.Marker = "event: " + events.ReplayComplete
	case "r3labs":
		srv := sse.New()
		srv.CreateStream("bench")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go func() { _ = http.Serve(ln, srv) }()
		hello.Streams = []string{"http://" + ln.Addr().String() + "/?stream=bench"}
		hello.Marker = "\r\n\r\n" // r3labs sends nothing but headers to an idle client
	default:
		return fmt.Errorf("unknown child role %q", role)
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(hello); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for n := 1; in.Scan(); n++ {
		if in.Text() != "stats" {
			continue
		}
		if err := out.Encode(readStats()); err != nil {
			return err
		}
		if heapOut != "" && role == "tetherd" {
			if err := writeHeap(fmt.Sprintf("%s.%d", heapOut, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("heap").WriteTo(f, 0)
}

func readStats() memStats {
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := memStats{HeapInuse: int64(ms.HeapInuse), StackInuse: int64(ms.StackInuse), Goroutines: runtime.NumGoroutine()}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				s.RSS = kb << 10
			}
		}
	}
	return s
}

// memResult is the memory figure of one server.
type memResult struct {
	server string
	subs   int
	// before: no subscriber; with: subs idle subscribers; churned: subs
	// idle subscribers after a first wave of subs came and went.
	before, with, churned memStats
}

func (m memResult) perSub(after memStats, f func(memStats) int64) float64 {
	return float64(f(after)-f(m.before)) / float64(m.subs)
}

// memory starts the server in a child process, connects subs idle SSE
// clients and compares the child's memory with and without them.
func memory(ctx context.Context, role string, subs, hubBuffer int, heapOut string) (memResult, error) {
	res := memResult{server: role, subs: subs}
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, self, "-idle", strconv.Itoa(subs), "-hub-buffer", strconv.Itoa(hubBuffer), "-memprofile", heapOut)
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	dec := json.NewDecoder(stdout)
	var hello childHello
	if err := dec.Decode(&hello); err != nil {
		return res, fmt.Errorf("child: %w", err)
	}
	stats := func() (memStats, error) {
		var s memStats
		if _, err := io.WriteString(stdin, "stats\n"); err != nil {
			return s, err
		}
		return s, dec.Decode(&s)
	}
	// Warm up: the first stream initialises routing, validation and
	// pools; that one-off cost is not a subscriber's.
	warm, err := idleConn(hello.Streams[0], hello.Header, hello.Marker)
	if err != nil {
		return res, err
	}
	warm.Close()
	if res.before, err = stats(); err != nil {
		return res, err
	}
	conns, err := connectIdle(hello, subs)
	if err != nil {
		return res, err
	}
	time.Sleep(500 * time.Millisecond)
	if res.with, err = stats(); err != nil {
		closeAll(conns)
		return res, err
	}
	// Churn: clients leave and new ones arrive. Freed heap is reused and
	// must be zeroed, so memory a first wave left untouched shows up now.
	closeAll(conns)
	time.Sleep(500 * time.Millisecond)
	if conns, err = connectIdle(hello, subs); err != nil {
		return res, err
	}
	defer closeAll(conns)
	time.Sleep(500 * time.Millisecond)
	res.churned, err = stats()
	return res, err
}

// connectIdle opens n idle streams, spread over the child's streams.
func connectIdle(hello childHello, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := idleConn(hello.Streams[i%len(hello.Streams)], hello.Header, hello.Marker)
				mu.Lock()
				conns[i] = c
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		closeAll(conns)
		return nil, firstErr
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// idleConn opens an SSE stream over a raw connection, reads until marker
// (the stream is live) and then stops reading.
func idleConn(rawURL string, header http.Header, marker string) (net.Conn, error) {
	conn, err := dialSSE(rawURL, header, 0)
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte(marker)) {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			conn.Close()
			return nil, errors.Join(fmt.Errorf("stream %s: %q", rawURL, got), err)
		}
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
		conn.Close()
		return nil, fmt.Errorf("stream %s: %q", rawURL, got)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn, nil
}
