package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// TestSplitBrain: node A runs in a network namespace and reaches the
// database over a veth pair; it owns a session whose agent streams on the
// executor host the nodes share. The pair is cut mid-turn: A keeps running
// (and keeps its connection to the host, a unix socket) but can reach the
// database no more, so its lease expires and node B takes the session,
// attaches to the host with a higher generation and completes the turn.
// When A's link comes back, everything A tried to commit for the session
// in the meantime is refused by fencing, and its host commands by the
// host: the transcript and the session's stream hold every chunk once, in
// order, and nothing of A's late writes.
func TestSplitBrain(t *testing.T) {
	ns := testbin.NewNetns(t)
	c := newCluster(t, 2*time.Second)
	// b listens on the namespace's peer address, which both the test and
	// a (inside) reach.
	b := c.nodeAt(ns.PeerIP, "b")
	c.start("b", "--executor", "detached", "--insecure-http")
	a := c.nodeIn(ns, "a")
	c.start("a", "--executor", "detached", "--database", c.dbVia(ns.PeerIP))

	sid := createSession(t, a.URL(), "split brain")
	if o := ownerOf(t, a.URL(), sid); o != "a" {
		t.Fatalf("the session created on a is owned by %q", o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
	defer cancel()
	// Followed on b, which serves every stream from the log.
	evs := followTurn(ctx, t, b.URL(), sid)
	prompt(t, a.URL(), sid, streamPrompt, "long")
	c.waitFor("the turn to stream", func() bool {
		_, tr := do(t, b.URL(), http.MethodGet, "/session/"+sid+"/transcript", nil)
		return strings.Contains(fmt.Sprint(tr["messages"]), "chunk 300")
	})
	ns.SetLink(false) // a loses the database (and b loses a)
	cut := time.Now()
	atCut := len(storedText(t, b.URL(), sid, "long"))
	c.waitFor("b to take the session", func() bool { return ownerOf(t, b.URL(), sid) == "b" })
	t.Logf("b took the session %s after the cut (lease TTL %s)", time.Since(cut).Round(time.Millisecond), c.ttl)
	// The turn's output goes on from b: the agent's host gave b the
	// session's record stream when b attached (a log, not a figure: the
	// figure is tether-bench's).
	c.waitFor("output committed by b", func() bool { return len(storedText(t, b.URL(), sid, "long")) > atCut })
	t.Logf("output went on from b %s after the cut", time.Since(cut).Round(time.Millisecond))
	if st := waitTurn(t, b.URL(), sid, "long"); st != "completed" {
		t.Fatalf("the turn on b: got %s, want completed", st)
	}

	ns.SetLink(true) // a is back: its late writes meet the fence
	c.waitFor("a's late writes to be refused", func() bool {
		return metric(t, a.URL(), "tether_cluster_fencing_rejections_total") >= 1
	})
	c.waitFor("a to be ready again", func() bool {
		r, err := http.Get(a.URL() + "/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	if o := ownerOf(t, a.URL(), sid); o != "b" {
		t.Errorf("after a came back the session is owned by %q, want b (a forwards to it)", o)
	}

	got := <-evs
	checkStream(t, got)
	var text strings.Builder
	for _, e := range got {
		if e.Type == "message.chunk" || (e.Type == "message.added" && e.Data["role"] == "agent") {
			s, _ := e.Data["text"].(string)
			text.WriteString(s)
		}
	}
	_, tr := do(t, b.URL(), http.MethodGet, "/session/"+sid+"/transcript", nil)
	transcript := fmt.Sprint(tr["messages"])
	for i := 1; i <= streamChunks; i++ {
		chunk := "chunk " + strconv.Itoa(i) + "\n"
		if n := strings.Count(text.String(), chunk); n != 1 {
			t.Fatalf("chunk %d arrived %d times on the stream, want once", i, n)
		}
		if n := strings.Count(transcript, chunk); n != 1 {
			t.Fatalf("chunk %d is %d times in the transcript, want once", i, n)
		}
	}
	// Once a reaches the database again, the session's every view is what
	// its log implies, asked of its owner b and of a, which forwards.
	checkOneTruth(t, b.URL(), sid)
	checkOneTruth(t, a.URL(), sid)
}

// nodeIn places node id (not started yet) in the namespace: it listens on
// the namespace's address, where the other nodes reach it.
func (c *cluster) nodeIn(ns *testbin.Netns, id string) *node {
	c.t.Helper()
	_, port, _ := net.SplitHostPort(testbin.FreeAddr(c.t))
	n := &node{id: id, addr: net.JoinHostPort(ns.IP, port), dir: c.dir + "/" + id, netns: ns.Name, ip: ns.IP}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// nodeAt places node id (not started yet) on address ip.
func (c *cluster) nodeAt(ip, id string) *node {
	c.t.Helper()
	_, port, _ := net.SplitHostPort(testbin.FreeAddr(c.t))
	n := &node{id: id, addr: net.JoinHostPort(ip, port), dir: c.dir + "/" + id}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// dbVia is the cluster's database URL through host (the address of the
// database's machine as a namespace reaches it).
func (c *cluster) dbVia(host string) string {
	u, err := url.Parse(c.db)
	if err != nil {
		c.t.Fatal(err)
	}
	u.Host = net.JoinHostPort(host, u.Port())
	return u.String()
}

// metric reads one unlabelled sample of a node's /metrics (-1 if absent).
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return -1
}
