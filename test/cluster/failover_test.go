package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tether/tether/internal/onetruth"
)

// streamTurn is a turn long enough to kill its node in: 3000 chunks with
// a pause every 100.
const (
	streamChunks = 3000
	streamPrompt = "/stream 3000 100 20"
)

// TestFailoverBehindBalancer: three nodes behind nginx on one database,
// the detached runtime. Sessions are created and prompted through the
// balancer, whichever node it picks. Then the node that owns a session
// is killed (kill -9) mid-turn: another node takes the session once its
// lease expires and attaches to its host, the turn goes on and completes
// without an interruption, and a client that follows the session's
// stream through the balancer (reconnecting with Last-Event-ID when its
// node dies) receives every event once, in order: every chunk exactly
// once. The takeover time is logged (the figure is tether-bench's).
func TestFailoverBehindBalancer(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	n1 := c.start("n1", "--executor", "detached")
	n2 := c.start("n2", "--executor", "detached")
	n3 := c.start("n3", "--executor", "detached")
	lb := c.startBalancer(n1, n2, n3)

	// Through the balancer: each request may land on any node, and a
	// session's requests reach its owner wherever they land.
	// The creates go out back to back, so that nginx's round robin deals
	// them to every node (between them, a turn's polling would take a
	// varying number of turns of the robin).
	owners := map[string]bool{}
	sids := make([]string, 6)
	for i := range sids {
		sids[i] = createSession(t, lb.URL(), fmt.Sprintf("s%d", i))
	}
	for i, sid := range sids {
		pid := fmt.Sprintf("p%d", i)
		prompt(t, lb.URL(), sid, "/echo hello "+pid, pid)
		if st := waitTurn(t, lb.URL(), sid, pid); st != "completed" {
			t.Fatalf("session %d: turn %s: got %s, want completed", i, pid, st)
		}
		owners[ownerOf(t, lb.URL(), sid)] = true
	}
	if len(owners) < 2 {
		t.Errorf("sessions created through the balancer are owned by %v, want them spread over the nodes", owners)
	}
	terminalThroughBalancer(t, lb.URL(), createSession(t, lb.URL(), "terminal"))

	sid := createSession(t, lb.URL(), "failover")
	owner := ownerOf(t, lb.URL(), sid)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	evs := followTurn(ctx, t, lb.URL(), sid)
	prompt(t, lb.URL(), sid, streamPrompt, "long")
	c.waitFor("the turn to stream", func() bool {
		_, tr := do(t, lb.URL(), http.MethodGet, "/session/"+sid+"/transcript", nil)
		return strings.Contains(fmt.Sprint(tr["messages"]), "chunk 500")
	})
	c.kill9(owner)
	killed := time.Now()
	var took time.Duration
	c.waitFor("another node to take the session", func() bool {
		o := ownerOf(t, lb.URL(), sid)
		if o != "" && o != owner {
			took = time.Since(killed)
			return true
		}
		return false
	})
	t.Logf("takeover after kill -9 of %s: %s (lease TTL %s)", owner, took.Round(time.Millisecond), c.ttl)
	if st := waitTurn(t, lb.URL(), sid, "long"); st != "completed" {
		t.Fatalf("the turn after the takeover: got %s, want completed", st)
	}
	got := <-evs
	checkStream(t, got)
	var text strings.Builder
	for _, e := range got {
		if e.Type == "turn.interrupted" {
			t.Errorf("the turn was interrupted: %v", e.Data)
		}
		if e.Type == "message.chunk" || (e.Type == "message.added" && e.Data["role"] == "agent") {
			s, _ := e.Data["text"].(string)
			text.WriteString(s)
		}
	}
	for i := 1; i <= streamChunks; i++ {
		if n := strings.Count(text.String(), "chunk "+strconv.Itoa(i)+"\n"); n != 1 {
			t.Fatalf("chunk %d arrived %d times on the stream, want once", i, n)
		}
	}
	// The stored transcript, not only the stream: every chunk once, in
	// order, whichever node stored it.
	checkStoredChunks(t, lb.URL(), sid, "long", streamChunks)
	// Every view of every session, whichever node serves it, is what the
	// session's log implies, the one taken over too.
	for _, s := range append(sids, sid) {
		checkOneTruth(t, lb.URL(), s)
	}
}

// checkStoredChunks fails unless turn promptID's agent text in the stored
// transcript is chunks 1..n of /stream, once each, in order.
func checkStoredChunks(t *testing.T, base, sid, promptID string, n int) {
	t.Helper()
	stored := storedText(t, base, sid, promptID)
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "chunk %d\n", i)
	}
	if stored == want.String() {
		return
	}
	var missing, twice []int
	for i := 1; i <= n; i++ {
		switch strings.Count(stored, "chunk "+strconv.Itoa(i)+"\n") {
		case 0:
			missing = append(missing, i)
		case 1:
		default:
			twice = append(twice, i)
		}
	}
	t.Errorf("the stored transcript of turn %s: %d bytes, want the %d chunks once each, in order (missing %d: %v; more than once %d: %v)",
		promptID, len(stored), n, len(missing), spans(missing), len(twice), spans(twice))
}

// storedText is turn promptID's agent text in sid's stored transcript.
func storedText(t *testing.T, base, sid, promptID string) string {
	t.Helper()
	_, tr := do(t, base, http.MethodGet, "/session/"+sid+"/transcript", nil)
	var stored strings.Builder
	for _, m := range asList(tr["messages"]) {
		if m["promptId"] == promptID && m["role"] == "agent" {
			s, _ := m["text"].(string)
			stored.WriteString(s)
		}
	}
	return stored.String()
}

// spans writes ascending numbers as ranges: [1 2 3 7] is "1-3 7".
func spans(ns []int) string {
	var b strings.Builder
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ns[i], ns[j])
		} else {
			fmt.Fprintf(&b, "%d", ns[i])
		}
		i = j + 1
	}
	return b.String()
}

// checkOneTruth compares what base (a node or the balancer) serves about
// sid, its transcript, status, context and recovery plan, with what the
// session's event log implies (issue 29); see package onetruth.
func checkOneTruth(t *testing.T, base, sid string) {
	t.Helper()
	onetruth.Daemon{Base: base, Token: token}.Check(t, sid)
}

// asList reads a JSON array of objects.
func asList(v any) []map[string]any {
	raw, _ := v.([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		if o, ok := x.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

// checkStream fails unless a session stream's durable events have one
// epoch and seqs 1, 2, 3, ...: nothing lost, nothing twice.
func checkStream(t *testing.T, evs []sseEvent) {
	t.Helper()
	epoch := ""
	for i, e := range evs {
		ep, seq, ok := strings.Cut(e.ID, ":")
		if !ok {
			t.Fatalf("event %d: id %q is no cursor", i, e.ID)
		}
		if epoch == "" {
			epoch = ep
		}
		if n, _ := strconv.Atoi(seq); ep != epoch || n != i+1 {
			t.Fatalf("event %d: got id %s, want %s:%d (a gap or a repeat)", i, e.ID, epoch, i+1)
		}
	}
}

func createSession(t *testing.T, base, title string) string {
	t.Helper()
	code, m := do(t, base, http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": t.TempDir(), "title": title})
	if code != http.StatusCreated {
		t.Fatalf("create session: got %d %v", code, m)
	}
	return m["id"].(string)
}

func prompt(t *testing.T, base, sid, text, promptID string) {
	t.Helper()
	code, m := do(t, base, http.MethodPost, "/session/"+sid+"/prompt",
		map[string]any{"prompt": []map[string]any{{"type": "text", "text": text}}, "promptId": promptID})
	if code != http.StatusAccepted {
		t.Fatalf("prompt %s: got %d %v", promptID, code, m)
	}
}

// waitTurn waits until the turn ends and returns its state.
func waitTurn(t *testing.T, base, sid, promptID string) string {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		code, m := do(t, base, http.MethodGet, "/session/"+sid+"/turns/"+promptID, nil)
		if st, _ := m["state"].(string); code == http.StatusOK && st != "running" && st != "queued" {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("turn %s of %s did not end", promptID, sid)
	return ""
}

// ownerOf is the node that owns the session, as its status says (the
// status is forwarded to the owner, which names itself).
func ownerOf(t *testing.T, base, sid string) string {
	t.Helper()
	code, m := do(t, base, http.MethodGet, "/session/"+sid+"/status", nil)
	if code != http.StatusOK {
		return ""
	}
	n, _ := m["node"].(string)
	return n
}

// terminalThroughBalancer opens a terminal of the session and its
// WebSocket through the balancer as a browser does (a ticket from
// whichever node, the WebSocket forwarded to the session's owner), types
// into it and reads the answer back.
func terminalThroughBalancer(t *testing.T, base, sid string) {
	t.Helper()
	code, term := do(t, base, http.MethodPost, "/session/"+sid+"/terminals", map[string]any{})
	if code != http.StatusCreated {
		t.Fatalf("open a terminal through the balancer: got %d %v", code, term)
	}
	code, tk := do(t, base, http.MethodPost, "/events/tickets", map[string]any{"sessionId": sid, "terminalId": term["id"]})
	if code != http.StatusCreated {
		t.Fatalf("terminal ticket through the balancer: got %d %v", code, tk)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+tk["url"].(string)+"&offset=0", nil)
	if err != nil {
		t.Fatalf("the terminal's WebSocket through the balancer: %v", err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageBinary, []byte("echo \"via-\"$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for !strings.Contains(out.String(), "via-42") {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("read the terminal: %v (so far %q)", err, out.String())
		}
		if typ == websocket.MessageBinary && len(b) > 8 {
			out.Write(b[8:])
		}
	}
}
