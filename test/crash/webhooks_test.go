package crash_test

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// receiver is a webhook endpoint: it checks each request's Standard
// Webhooks signature (its own HMAC, not tetherd's code) and records what
// came, in order of arrival.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex
	secret string
	fail   bool          // answer 500
	delay  time.Duration // before answering: deliveries lag the log
	got    []delivery
	bad    []string
}

type delivery struct {
	id, typ, eventID string
	body             string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id, ts, sig := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	r.mu.Lock()
	delay := r.delay
	r.mu.Unlock()
	time.Sleep(delay)
	r.mu.Lock()
	defer r.mu.Unlock()
	if problem := verify(r.secret, id, ts, sig, body); problem != "" {
		r.bad = append(r.bad, problem)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var p struct {
		Type string `json:"type"`
		Data struct {
			EventID string `json:"eventId"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	r.got = append(r.got, delivery{id: id, typ: p.Type, eventID: p.Data.EventID, body: string(body)})
	if r.fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// verify checks a request as Standard Webhooks says: v1 and the base64
// HMAC-SHA256 of "id.timestamp.body" keyed with the secret's bytes, a
// timestamp within 5 minutes.
func verify(secret, id, ts, sig string, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || id == "" {
		return "no secret or no webhook-id"
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(n, 0)).Abs() > 5*time.Minute {
		return "bad webhook-timestamp " + ts
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !slices.Contains(strings.Fields(sig), want) {
		return "bad signature for " + id
	}
	return ""
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// webhookTypes maps the global log's event types to the webhook's.
var webhookTypes = map[string]string{"permission.requested": "permission.requested", "permission.resolved": "permission.resolved",
	"turn.completed": "turn.ended", "turn.failed": "turn.ended", "turn.cancelled": "turn.ended", "turn.interrupted": "turn.interrupted"}

// TestWebhooksThroughKill9 (issue 33): a webhook subscribed to every event
// sees each event of three sessions through five kill -9 of tetherd, as
// the global log holds them: none lost, in the log's order, an event that
// comes again with the same webhook-id, every request verified by the
// standardwebhooks npm package (Standard Webhooks' own library).
func TestWebhooksThroughKill9(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	// Slower than the turns: each kill -9 lands with deliveries behind
	// the log and some delivered but not yet saved as such.
	rec := newNodeReceiver(t, secret, 40*time.Millisecond)
	w := hostedWorld(t)
	w.start()
	code, hook := w.do("POST", "/webhooks", map[string]any{"url": rec.url, "secret": secret,
		"events": []string{"permission.requested", "permission.resolved", "turn.ended", "turn.interrupted", "session.needs_credentials"}})
	if code != http.StatusCreated || hook["secret"] != secret {
		t.Fatalf("create webhook: got %d %v", code, hook)
	}
	var sids []string
	for range 3 {
		sid, _ := w.createSessionOn("demo", "standalone")
		sids = append(sids, sid)
	}
	for cycle := range 5 {
		for i, sid := range sids {
			pid := fmt.Sprintf("c%d-%d", cycle, i)
			w.prompt(sid, fmt.Sprintf("/echo cycle %d", cycle), pid)
			if i < 2 {
				w.waitTurn(sid, pid) // the third is killed mid-way or not, as it goes
			}
		}
		w.kill9()
		w.start()
	}
	for _, sid := range sids {
		w.prompt(sid, "/echo last", "last")
		w.waitTurn(sid, "last")
	}

	// What the webhook should have seen: the global log's events of its
	// types (all after its creation, which came before any session), in
	// order.
	var want []string
	for _, f := range testbin.ReplayGlobal(t, nil, "http://"+w.addr, token) {
		if _, ok := webhookTypes[f.Event]; ok {
			want = append(want, strings.Replace(f.ID, ":", "_", 1))
		}
	}
	var got []delivery
	w.waitFor("every event delivered", func() bool {
		got = rec.deliveries()
		return len(firstSeen(got)) >= len(want)
	})
	if bad := rec.problems(); len(bad) > 0 {
		t.Fatalf("requests standardwebhooks did not verify: %v", bad)
	}
	order := firstSeen(got)
	if !slices.Equal(order, want) {
		t.Fatalf("delivered in this order (first arrivals): %v\nwant the log's: %v", order, want)
	}
	byID := map[string]delivery{}
	dups := 0
	for _, d := range got {
		if prev, ok := byID[d.id]; ok {
			dups++
			if prev.body != d.body {
				t.Errorf("event %s came twice with different bodies:\n%s\n%s", d.id, prev.body, d.body)
			}
		}
		byID[d.id] = d
	}
	t.Logf("%d events delivered, %d of them again after a kill -9", len(order), dups)
	if len(want) < 3*5 {
		t.Fatalf("only %d events to deliver: the test made too few", len(want))
	}
}

func firstSeen(ds []delivery) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range ds {
		if !seen[d.id] {
			seen[d.id] = true
			out = append(out, d.id)
		}
	}
	return out
}

// TestWebhookFailingIsRetriedThenDisabled: a receiver that fails every
// attempt gets the same event again (the same webhook-id, attempts
// counted) with backoff, until the webhook is disabled with the reason in
// the API; enabled again once the receiver works, it delivers from where
// it stopped, and the disabling survives a restart.
func TestWebhookFailingIsRetriedThenDisabled(t *testing.T) {
	rec := newReceiver(t)
	rec.fail = true
	w := hostedWorld(t)
	flags := []string{"--webhook-retry-base", "20ms", "--webhook-retry-max", "80ms", "--webhook-max-failures", "4"}
	w.start(flags...)
	code, hook := w.do("POST", "/webhooks", map[string]any{"url": rec.srv.URL, "events": []string{"turn.ended"}})
	if code != http.StatusCreated {
		t.Fatalf("create webhook: got %d %v", code, hook)
	}
	rec.mu.Lock()
	rec.secret = hook["secret"].(string)
	rec.mu.Unlock()
	id := hook["id"].(string)
	sid, _ := w.createSessionOn("demo", "standalone")
	w.prompt(sid, "/echo one", "p1")
	w.waitTurn(sid, "p1")
	var h map[string]any
	w.waitFor("the webhook to be disabled", func() bool {
		h = w.get("/webhooks/" + id)
		return h["state"] == "disabled"
	})
	if r, _ := h["disabledReason"].(string); !strings.Contains(r, "4 failed attempts") || !strings.Contains(r, "HTTP 500") {
		t.Errorf("disabledReason: got %q, want the 4 failed attempts and HTTP 500", r)
	}
	got := rec.deliveries()
	if len(got) != 4 || len(firstSeen(got)) != 1 {
		t.Fatalf("attempts: got %d of %d events, want 4 of one event", len(got), len(firstSeen(got)))
	}
	log := list(w.get("/webhooks/"+id+"/deliveries"), "deliveries")
	if len(log) != 4 {
		t.Fatalf("delivery log: got %d attempts, want 4: %v", len(log), log)
	}
	for i, d := range log { // newest first
		if d["attempt"] != float64(4-i) || d["ok"] != false || d["statusCode"] != float64(500) || d["messageId"] != got[0].id {
			t.Errorf("logged attempt %d: got %v, want attempt %d of %s, failed with 500", i, d, 4-i, got[0].id)
		}
	}

	// The disabled webhook's worker stops just after its state is saved.
	w.waitFor("no webhook delivered", func() bool { return strings.Contains(w.metricsText(), "\ntether_webhooks_delivering 0\n") })
	metrics := w.metricsText()
	for _, line := range []string{`tether_webhook_attempts_total{outcome="failed"} 4`, `tether_webhook_attempts_total{outcome="ok"} 0`, "tether_webhook_leader 1"} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics: no line %q", line)
		}
	}

	// Disabled it stays, through a restart; a turn meanwhile waits.
	w.prompt(sid, "/echo two", "p2")
	w.waitTurn(sid, "p2")
	w.term()
	w.start(flags...)
	if h := w.get("/webhooks/" + id); h["state"] != "disabled" {
		t.Fatalf("after a restart: got state %v, want disabled", h["state"])
	}
	rec.mu.Lock()
	rec.fail = false
	rec.mu.Unlock()
	if code, h := w.do("PATCH", "/webhooks/"+id, map[string]any{"active": true}); code != http.StatusOK || h["state"] != "active" {
		t.Fatalf("enable: got %d %v", code, h)
	}
	w.waitFor("both turns delivered", func() bool { return len(firstSeen(rec.deliveries())) == 2 })
	if h := w.get("/webhooks/" + id); h["state"] != "active" || h["failures"] != nil && h["failures"] != float64(0) {
		t.Errorf("after delivering: got %v, want active with no failures", h)
	}
	if code, m := w.do("POST", "/webhooks/"+id+"/test", nil); code != http.StatusOK || m["ok"] != true || m["eventType"] != "webhook.test" {
		t.Errorf("test delivery: got %d %v", code, m)
	}
	if code, m := w.do("POST", "/webhooks", map[string]any{"url": "ftp://x", "events": []string{"turn.ended"}}); code != http.StatusBadRequest {
		t.Errorf("an ftp URL: got %d %v, want 400", code, m)
	}
	if code, m := w.do("POST", "/webhooks", map[string]any{"url": rec.srv.URL, "events": []string{"turn.ended"}, "secret": "nope"}); code != http.StatusBadRequest {
		t.Errorf("a bad secret: got %d %v, want 400", code, m)
	}
	if code, _ := w.do("DELETE", "/webhooks/"+id, nil); code != http.StatusNoContent {
		t.Errorf("delete: got %d", code)
	}
	if code, _ := w.do("GET", "/webhooks/"+id, nil); code != http.StatusNotFound {
		t.Errorf("after delete: got %d, want 404", code)
	}
}

// nodeReceiver is a webhook endpoint in Node (testdata/webhook-receiver.mjs)
// that verifies each request with the standardwebhooks npm package.
type nodeReceiver struct {
	url string

	mu  sync.Mutex
	got []delivery
	bad []string
}

func newNodeReceiver(t *testing.T, secret string, delay time.Duration) *nodeReceiver {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the receiver needs node:", err)
	}
	cmd := exec.Command(node, filepath.Join(testbin.Root(), "test", "crash", "testdata", "webhook-receiver.mjs"))
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "DELAY_MS="+strconv.Itoa(int(delay.Milliseconds())))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() {
		t.Fatalf("the receiver did not start: %v", lines.Err())
	}
	port, ok := strings.CutPrefix(lines.Text(), "listening ")
	if !ok {
		t.Fatalf("the receiver said %q", lines.Text())
	}
	r := &nodeReceiver{url: "http://127.0.0.1:" + port + "/hook"}
	go func() {
		for lines.Scan() {
			var l struct{ ID, Type, EventID, Body, Bad string }
			if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
				l.Bad = "an unreadable line: " + lines.Text()
			}
			r.mu.Lock()
			if l.Bad != "" {
				r.bad = append(r.bad, l.Bad)
			} else {
				r.got = append(r.got, delivery{id: l.ID, typ: l.Type, eventID: l.EventID, body: l.Body})
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *nodeReceiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *nodeReceiver) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// metricsText is GET /metrics.
func (w *world) metricsText() string {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+w.addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
