package server_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestRestoreSpans checks the span tree of agent starts: a first start is
// acp.session.start over acp.session.new; a restore after the agent died is
// acp.session.restore over the acp.session.resume request that decided it.
func TestRestoreSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })

	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/crash", ""))
	d.waitTurn(sid, d.prompt(sid, "/echo back", ""))

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	cases := []struct {
		name, parent, child string
		attrs               map[string]string
	}{
		{"first start", "acp.session.start", "acp.session.new", map[string]string{"tether.outcome": "ready"}},
		{"restore after crash", "acp.session.restore", "acp.session.resume",
			map[string]string{"tether.outcome": "ready", "tether.strategy": "native_resume"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parents, children := byName[tc.parent], byName[tc.child]
			if len(parents) != 1 {
				t.Fatalf("got %d %s spans, want 1 (all: %v)", len(parents), tc.parent, names(spans))
			}
			p := parents[0]
			found := false
			for _, c := range children {
				if c.Parent.SpanID() == p.SpanContext.SpanID() {
					found = true
					if got := attr(c.Attributes, "acp.outcome"); got != "ok" {
						t.Errorf("%s acp.outcome: got %q, want ok", tc.child, got)
					}
				}
			}
			if !found {
				t.Errorf("no %s span under %s", tc.child, tc.parent)
			}
			for k, want := range tc.attrs {
				if got := attr(p.Attributes, k); got != want {
					t.Errorf("%s %s: got %q, want %q", tc.parent, k, got, want)
				}
			}
		})
	}
}

func attr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
