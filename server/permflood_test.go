package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
)

// TestPermissionFloodIsBounded has the demo agent ask 40 permission
// questions at once against a limit of 4 open ones: the 36 beyond it are
// answered "cancelled" at once and stored nowhere, the 4 wait for the user,
// and an answered one frees its place.
func TestPermissionFloodIsBounded(t *testing.T) {
	const asked, limit = 40, 4
	d := startDaemon(t, daemonOptions{sessions: sessions.Config{MaxPendingPermissions: limit}})
	sid, _ := d.createSession(nil)
	pid := d.prompt(sid, "/permission-many 40", "flood")
	answered := func(outcome string) int {
		n := 0
		for _, m := range list(d.transcript(sid), "messages") {
			n += strings.Count(m["text"].(string), "permission "+outcome+" (")
		}
		return n
	}
	d.waitFor("the requests past the limit to be refused", func() bool { return answered("cancelled") == asked-limit })
	pending := list(d.transcript(sid), "pendingPermissions")
	if len(pending) != limit {
		t.Fatalf("pending permissions: got %d, want %d", len(pending), limit)
	}

	// An answered question leaves room for the agent's next one; none of
	// the refused ones was ever put to the user.
	r := d.do("POST", "/session/"+sid+"/permission/"+pending[0]["id"].(string), map[string]any{"optionId": "allow_once"})
	if r.Status != http.StatusOK {
		t.Fatalf("answer: got %d %s, want 200", r.Status, r.Body)
	}
	d.waitFor("the answer to reach the agent", func() bool { return answered("allow_once") == 1 })
	d.do("POST", "/session/"+sid+"/cancel", nil)
	if got := d.waitTurn(sid, pid)["state"]; got != "cancelled" {
		t.Errorf("turn: got %v, want cancelled", got)
	}
	if got := answered("cancelled"); got != asked-1 {
		t.Errorf("cancelled answers: got %d, want %d", got, asked-1)
	}
	requested := 0
	for _, e := range d.sessionLog(sid) {
		if e.Type == events.PermissionRequested {
			requested++
		}
	}
	if requested != limit {
		t.Errorf("permission.requested events: got %d, want %d (the refused ones are stored nowhere)", requested, limit)
	}
}
