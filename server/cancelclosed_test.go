package server_test

import (
	"net/http"
	"testing"
)

// TestCancelAfterCloseLeavesTheLogClosed: session.closed is the last event
// of a closed session's log. A cancel of a closed session whose last turn
// was interrupted used to record the cancel on that turn and push
// session.recovery_changed after session.closed.
func TestCancelAfterCloseLeavesTheLogClosed(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	d.crashTurn(sid, "/crash", "p1")
	if r := d.do("DELETE", "/session/"+sid, nil); r.Status != http.StatusOK {
		t.Fatalf("close: got %d %s, want 200", r.Status, r.Body)
	}
	r := d.do("POST", "/session/"+sid+"/cancel", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("cancel: got %d %s, want 200", r.Status, r.Body)
	}
	if got := r.JSON(t)["cancelled"]; got != false {
		t.Errorf("cancel of a closed session: got cancelled %v, want false", got)
	}
	if turn := d.turn(sid, "p1"); turn["cancelRequested"] == true {
		t.Errorf("turn p1 after a cancel of its closed session: got %v, want no cancel recorded", turn)
	}
	log := d.sessionEvents(sid)
	if len(log) == 0 || log[len(log)-1].Event != "session.closed" {
		var tail []string
		for _, f := range log[max(0, len(log)-3):] {
			tail = append(tail, f.Event)
		}
		t.Errorf("session log ends with %v, want session.closed last", tail)
	}
}
