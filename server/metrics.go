package server

import (
	"context"
	"maps"
	"slices"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/buildinfo"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
)

// GetMetrics renders the daemon's gauges and counters in the Prometheus
// text format. It is computed on demand: nothing is sampled in between.
func (h *handlers) GetMetrics(ctx context.Context, _ GetMetricsRequestObject) (GetMetricsResponseObject, error) {
	var x exposition
	x.family("tether_build_info", "gauge", "Build information.")
	b := buildinfo.Get()
	x.sample("tether_build_info", []label{{"version", b.Version}, {"api_version", b.API}, {"commit", b.Commit}}, 1)
	live := h.cfg.Sessions.Live(ctx)
	x.single("tether_sessions_live", "gauge", "Sessions with a live actor in this daemon.", float64(live.Sessions))
	x.single("tether_agents_running", "gauge", "Sessions whose agent is connected.", float64(live.Agents))
	longest, _ := h.cfg.Sessions.MailboxStats()
	x.single("tether_session_mailbox_max", "gauge", "Closures queued for the busiest session's actor (bounded by --session-mailbox plus the agent's --agent-update-window).", float64(longest))
	if h.cfg.Hub != nil {
		x.single("tether_stream_subscribers", "gauge", "Open SSE subscriptions.", float64(h.cfg.Hub.Count()))
		x.single("tether_stream_subscribers_parked", "gauge", "Open SSE subscriptions past their catch-up whose HTTP/1.1 connections left net/http: no goroutine or buffer of their own while idle.", float64(h.parked.Load()))
	}
	if h.cfg.Writer != nil {
		evs, batches := h.cfg.Writer.Stats()
		x.single("tether_events_committed_total", "counter", "Durable events committed since start.", float64(evs))
		x.single("tether_event_batches_total", "counter", "Group-commit transactions since start.", float64(batches))
		retries, busy := h.cfg.Writer.RetryStats()
		x.single("tether_event_writer_retries_total", "counter", "Event batches rolled back and redone one op per transaction.", float64(retries))
		x.single("tether_event_writer_busy_total", "counter", "Event writer transactions that failed with \"database is locked\".", float64(busy))
		rounds, failed := h.cfg.Writer.SyncStats()
		x.single("tether_event_log_syncs_total", "counter", "Syncs of the event log to disk that let acknowledgements to executor hosts go (SQLite only).", float64(rounds))
		x.single("tether_event_log_sync_failures_total", "counter", "Syncs of the event log that failed; the acknowledgements they held wait for the next.", float64(failed))
		limit, _, waiting := h.cfg.Writer.QueueStats()
		x.single("tether_event_writer_queue", "gauge", "Changes waiting for the event writer.", float64(h.cfg.Writer.Queued()))
		x.single("tether_event_writer_queue_limit", "gauge", "The event writer's queue bound (--writer-queue).", float64(limit))
		x.single("tether_event_writer_waiting", "gauge", "Producers waiting for room in the event writer's full queue.", float64(waiting))
		failures := h.cfg.Writer.FailureStats()
		x.family("tether_event_writer_failures_total", "counter", "Changes the event writer could not store, by error code (store_write_failed: a store failure; others: refusals such as an unknown task).")
		for _, code := range slices.Sorted(maps.Keys(failures)) {
			x.sample("tether_event_writer_failures_total", []label{{"code", code}}, float64(failures[code]))
		}
	}
	x.single("tether_sqlite_busy_total", "counter",
		"SQLITE_BUSY/SQLITE_LOCKED errors the store returned (each after the 5 s busy timeout).", float64(store.BusyErrors()))
	if h.cfg.Store != nil {
		c := h.cfg.Store.CheckpointStats()
		x.single("tether_sqlite_checkpoints_total", "counter", "WAL checkpoints run beside the writer and by it.", float64(c.Rounds))
		x.single("tether_sqlite_wal_restarts_total", "counter", "WAL restarts the writer made after a checkpoint round found the WAL long.", float64(c.Restarts))
		x.single("tether_sqlite_checkpoint_failures_total", "counter", "WAL checkpoints that failed.", float64(c.Failed))
		x.single("tether_sqlite_wal_frames", "gauge", "The WAL's length in frames (pages) at the last checkpoint.", float64(c.WALFrames))
	}
	if h.cfg.Store != nil {
		usageMetrics(ctx, &x, h.cfg.Store)
	}
	if h.cfg.Webhooks != nil {
		w := h.cfg.Webhooks.Stats()
		x.family("tether_webhook_attempts_total", "counter", "Webhook delivery attempts this node made since start, by outcome (ok: a 2xx answer).")
		x.sample("tether_webhook_attempts_total", []label{{"outcome", "ok"}}, float64(w.Delivered))
		x.sample("tether_webhook_attempts_total", []label{{"outcome", "failed"}}, float64(w.Failed))
		leading := 0.0
		if w.Leading {
			leading = 1
		}
		x.single("tether_webhook_leader", "gauge", "1 while this node delivers the webhooks (one node of several does).", leading)
		x.single("tether_webhooks_delivering", "gauge", "Active webhooks this node delivers now.", float64(w.Workers))
	}
	if h.cfg.Cluster != nil {
		clusterMetrics(&x, h.cfg.Cluster())
	}
	writeAgentProcesses(&x, live.Hosted)
	if h.cfg.Connections != nil {
		c := h.cfg.Connections()
		x.single("tether_http_connections_open", "gauge", "Client connections held by the listener.", float64(c.Open))
		x.single("tether_http_connections_max", "gauge", "The listener's connection cap (--max-connections).", float64(c.Max))
		x.single("tether_http_connections_evicted_total", "counter", "Idle or stalled connections closed to admit a newcomer at the cap.", float64(c.Evicted))
		x.single("tether_http_connections_refused_total", "counter", "Connections answered 503 (or closed) because every slot was busy.", float64(c.Refused))
	}
	h.http.write(&x)
	writeProcessMetrics(&x)
	return GetMetrics200TextResponse(x.String()), nil
}

// writeAgentProcesses adds the agent process families, by profile. The
// gauge counts the agent processes of every runtime: the daemon's own
// children (standalone sessions and capability probes, started and not
// yet reaped) and the agents its sessions hold on executor hosts
// (detached and remote), which run there, not here.
func writeAgentProcesses(x *exposition, hosted []sessions.AgentCount) {
	counts := acp.ProcessCounts()
	x.family("tether_agent_processes", "gauge", "Agent processes this daemon's sessions run, by profile and runtime: standalone ones are its children (capability probes included), detached and remote ones run on executor hosts.")
	for _, c := range counts {
		x.sample("tether_agent_processes", []label{{"profile", c.Profile}, {"runtime", string(session.RuntimeStandalone)}}, float64(c.Running))
	}
	for _, c := range hosted {
		x.sample("tether_agent_processes", []label{{"profile", c.Profile}, {"runtime", string(c.Runtime)}}, float64(c.N))
	}
	x.family("tether_agent_process_starts_total", "counter", "Agent processes this daemon started itself (standalone, capability probes), by profile.")
	for _, c := range counts {
		x.sample("tether_agent_process_starts_total", []label{{"profile", c.Profile}}, float64(c.Starts))
	}
	x.family("tether_agent_process_exits_total", "counter", "Agent processes this daemon started itself and reaped, by profile and outcome (ok, error, signal).")
	for _, c := range counts {
		for _, outcome := range slices.Sorted(maps.Keys(c.Exits)) {
			x.sample("tether_agent_process_exits_total", []label{{"profile", c.Profile}, {"outcome", outcome}}, float64(c.Exits[outcome]))
		}
	}
}

// usageMetrics is what the agents say they used, by profile, summed over
// every session in the database (docs/inbox.md, usage). A scrape that
// cannot read it leaves the families out.
func usageMetrics(ctx context.Context, x *exposition, st *store.Store) {
	totals, err := st.UsageTotals(ctx)
	if err != nil {
		return
	}
	x.family("tether_usage_tokens_total", "counter", "Tokens the agents say their sessions used, by agent profile and kind (input, output, cached_read, cached_write, total), over every session in the database.")
	for _, t := range totals {
		for _, k := range []struct {
			kind string
			n    int64
		}{{"input", t.Tokens.InputTokens}, {"output", t.Tokens.OutputTokens}, {"cached_read", t.Tokens.CachedReadTokens},
			{"cached_write", t.Tokens.CachedWriteTokens}, {"total", t.Tokens.TotalTokens}} {
			x.sample("tether_usage_tokens_total", []label{{"profile", t.Profile}, {"kind", k.kind}}, float64(k.n))
		}
	}
	x.family("tether_usage_cost_total", "counter", "What the agents say their sessions cost, by agent profile and currency, over every session in the database.")
	for _, t := range totals {
		for _, c := range slices.Sorted(maps.Keys(t.Cost)) {
			x.sample("tether_usage_cost_total", []label{{"profile", t.Profile}, {"currency", c}}, t.Cost[c])
		}
	}
}
