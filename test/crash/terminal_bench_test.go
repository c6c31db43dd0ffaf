package crash_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/testbin"
)

// BenchmarkTerminalKeystroke is the round trip of one keystroke over the
// detached runtime, on the real binaries: typed on the WebSocket, through
// tetherd and the host protocol to the PTY, echoed by `cat` and back the
// same way. It reports the run's p50 and p99 (the goal: p99 ≤ 20 ms over
// the detached runtime); standalone, the daemon's own PTY, is the
// baseline.
//
//	go test -run XXX -bench TerminalKeystroke -benchtime 2000x ./test/crash/
func BenchmarkTerminalKeystroke(b *testing.B) {
	for _, runtime := range []string{"detached", "standalone"} {
		b.Run(runtime, func(b *testing.B) { benchKeystrokes(b, runtime) })
	}
}

func benchKeystrokes(b *testing.B, runtime string) {
	addr := benchDaemon(b, "--executor", runtime)
	api := func(method, path string, body any) map[string]any {
		b.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode >= 300 {
			b.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, m)
		}
		return m
	}
	sid := api(http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": b.TempDir()})["id"].(string)
	tid := api(http.MethodPost, "/session/"+sid+"/terminals", map[string]any{})["id"].(string)
	s := attachTerminal(b, addr, sid, tid, 0)
	defer s.c.Close(websocket.StatusNormalClosure, "")
	// No tty echo, no line buffering: cat writes back each key as it
	// comes, once. READY2 is the shell's output, not the typed line's echo.
	s.typeText("stty -echo -icanon min 1; echo READY$((1+1)); cat\n")
	s.until("READY2")
	var rtts []time.Duration
	for i := 0; b.Loop(); i++ {
		key := []byte{byte('a' + i%26)}
		start := time.Now()
		s.typeText(string(key))
		for {
			typ, data, err := s.next(10 * time.Second)
			if err != nil {
				b.Fatal(err)
			}
			s.take(typ, data)
			if typ == websocket.MessageBinary && bytes.Contains(data[8:], key) {
				break
			}
		}
		rtts = append(rtts, time.Since(start))
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds())/1000, "p99-ms")
}

// benchDaemon starts tetherd for a benchmark and returns its address; the
// daemon and the executor hosts it started stop when the benchmark ends.
func benchDaemon(b *testing.B, extra ...string) string {
	b.Helper()
	bin, addr, dir := testbin.Tetherd(b), testbin.FreeAddr(b), b.TempDir()
	cmd := exec.Command(bin, append([]string{"serve", "--data-dir", dir, "--addr", addr, "--token", token, "--log-level", "warn"}, extra...)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		// The host outlives the daemon on purpose.
		if pid := host.Running(filepath.Join(dir, "host")); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(end) {
			b.Fatalf("tetherd did not become healthy:\n%s", logs.String())
		}
		if _, err := os.Stat(dir); err != nil {
			b.Fatal(err)
		}
	}
}
