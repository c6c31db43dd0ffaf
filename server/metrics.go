package server

import (
	"context"
	"fmt"
	"strings"
)

// GetMetrics renders the daemon's gauges and counters in the Prometheus
// text format. It is computed on demand: nothing is sampled in between.
func (h *handlers) GetMetrics(ctx context.Context, _ GetMetricsRequestObject) (GetMetricsResponseObject, error) {
	var b strings.Builder
	metric := func(name, typ, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, typ, name, v)
	}
	fmt.Fprintf(&b, "# HELP tether_build_info Build information.\n# TYPE tether_build_info gauge\ntether_build_info{version=%q} 1\n", Version)
	live, agents := h.cfg.Sessions.Live(ctx)
	metric("tether_sessions_live", "gauge", "Sessions with a live actor in this daemon.", int64(live))
	metric("tether_agents_running", "gauge", "Agent processes running.", int64(agents))
	if h.cfg.Hub != nil {
		metric("tether_stream_subscribers", "gauge", "Open SSE subscriptions.", int64(h.cfg.Hub.Count()))
	}
	if h.cfg.Writer != nil {
		evs, batches := h.cfg.Writer.Stats()
		metric("tether_events_committed_total", "counter", "Durable events committed since start.", evs)
		metric("tether_event_batches_total", "counter", "Group-commit transactions since start.", batches)
	}
	return GetMetrics200TextResponse(b.String()), nil
}
