package server_test

import (
	"encoding/json"
	"testing"
)

// usageOf is a turn's or session's usage as the API gives it, as JSON
// ("null" for none).
func usageOf(m map[string]any) string {
	b, _ := json.Marshal(m["usage"])
	return string(b)
}

// TestUsage (issue 33): the agent's usage_update reports, and the token
// usage its answer to each prompt carries, are recorded as usage.updated:
// each turn holds its tokens and context window, the session its tokens
// summed and its latest context window and cost; a report after a turn
// ended goes to the session alone; both are projections of the log (the
// same after a restart, and as the log's fold says).
func TestUsage(t *testing.T) {
	opts := daemonOptions{}
	d := startDaemon(t, opts)
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/usage 3", "u1"))
	if got, want := usageOf(d.turn(sid, "u1")), `{"cachedReadTokens":15,"contextSize":200000,"contextUsed":3000,"inputTokens":300,"outputTokens":30,"totalTokens":330}`; got != want {
		t.Errorf("turn u1's usage: got %s, want %s", got, want)
	}
	if got, want := usageOf(d.session(sid)), `{"cachedReadTokens":15,"contextSize":200000,"contextUsed":3000,"cost":{"amount":0.03,"currency":"USD"},"inputTokens":300,"outputTokens":30,"totalTokens":330}`; got != want {
		t.Errorf("the session's usage: got %s, want %s", got, want)
	}
	d.waitTurn(sid, d.prompt(sid, "/usage 1", "u2"))
	if got, want := usageOf(d.turn(sid, "u2")), `{"cachedReadTokens":5,"contextSize":200000,"contextUsed":1000,"inputTokens":100,"outputTokens":10,"totalTokens":110}`; got != want {
		t.Errorf("turn u2's usage: got %s, want %s", got, want)
	}
	if got, want := usageOf(d.turn(sid, "u1")), `{"cachedReadTokens":15,"contextSize":200000,"contextUsed":3000,"inputTokens":300,"outputTokens":30,"totalTokens":330}`; got != want {
		t.Errorf("turn u1's usage after u2: got %s, want %s", got, want)
	}
	d.waitTurn(sid, d.prompt(sid, "/usage 2 late", "u3"))
	d.waitFor("the late reports", func() bool {
		return usageOf(d.session(sid)) == `{"cachedReadTokens":30,"contextSize":200000,"contextUsed":2000,"cost":{"amount":0.02,"currency":"USD"},"inputTokens":600,"outputTokens":60,"totalTokens":660}`
	})
	// Its answer's tokens came with it; its usage_updates after it ended.
	if got, want := usageOf(d.turn(sid, "u3")), `{"cachedReadTokens":10,"inputTokens":200,"outputTokens":20,"totalTokens":220}`; got != want {
		t.Errorf("turn u3, whose reports came after it ended: got usage %s, want %s (its answer's tokens only)", got, want)
	}
	n := 0
	for _, f := range d.replayLog("/session/" + sid + "/events?follow=false") {
		if f.Event == "usage.updated" {
			n++
		}
	}
	if n != 9 {
		t.Errorf("usage.updated events: got %d, want 9 (one a report: 6 usage_update, 3 answers' tokens)", n)
	}
	d.checkOneTruth(sid)
	if got, want := usageOf(d.status(sid)), usageOf(d.session(sid)); got != want {
		t.Errorf("/status's usage: got %s, want the session's %s", got, want)
	}
	for metric, want := range map[string]string{
		`tether_usage_tokens_total{profile="demo",kind="input"}`:       "600",
		`tether_usage_tokens_total{profile="demo",kind="cached_read"}`: "30",
		`tether_usage_tokens_total{profile="demo",kind="total"}`:       "660",
		`tether_usage_cost_total{profile="demo",currency="USD"}`:       "0.02",
	} {
		if got := d.metric(metric); got != want {
			t.Errorf("%s: got %q, want %s", metric, got, want)
		}
	}

	d = d.restart(opts)
	if got, want := usageOf(d.turn(sid, "u1")), `{"cachedReadTokens":15,"contextSize":200000,"contextUsed":3000,"inputTokens":300,"outputTokens":30,"totalTokens":330}`; got != want {
		t.Errorf("after a restart, turn u1's usage: got %s, want %s", got, want)
	}
	if got, want := usageOf(d.session(sid)), `{"cachedReadTokens":30,"contextSize":200000,"contextUsed":2000,"cost":{"amount":0.02,"currency":"USD"},"inputTokens":600,"outputTokens":60,"totalTokens":660}`; got != want {
		t.Errorf("after a restart, the session's usage: got %s, want %s", got, want)
	}
	d.waitTurn(sid, d.prompt(sid, "/usage 1", "u4"))
	if got, want := usageOf(d.session(sid)), `{"cachedReadTokens":35,"contextSize":200000,"contextUsed":1000,"cost":{"amount":0.01,"currency":"USD"},"inputTokens":700,"outputTokens":70,"totalTokens":770}`; got != want {
		t.Errorf("after a restart and a turn, the session's usage: got %s, want %s", got, want)
	}
	d.checkOneTruth(sid)
}
