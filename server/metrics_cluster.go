package server

import "time"

// ClusterStats are a cluster node's counters (internal/cluster), reported
// by /metrics when several nodes share the database.
type ClusterStats struct {
	NodeID string
	// LeasesHeld is how many session leases the node holds now;
	// LeasesAcquired, LeasesLost and RenewFailures count since start.
	LeasesHeld, LeasesAcquired, LeasesLost, RenewFailures int64
	// TakenOver counts sessions taken from nodes that went away, and
	// TakeoverFailed those whose restore failed after the lease was taken.
	TakenOver, TakeoverFailed int64
	// Fenced counts the sessions whose writes this node's writer had
	// refused because it no longer held their leases.
	Fenced int64
	// FeedDelivered counts events handed to this node's streams from the
	// log; FeedGapsSkipped ids given up after waiting; FeedLagP50/P99 the
	// time from an event's commit (on any node) to its delivery here.
	FeedDelivered, FeedGapsSkipped int64
	FeedLagP50, FeedLagP99         time.Duration
}

// clusterMetrics adds a node's families to x.
func clusterMetrics(x *exposition, st ClusterStats) {
	x.family("tether_cluster_node_info", "gauge", "This node's id among the nodes sharing the database.")
	x.sample("tether_cluster_node_info", []label{{"node", st.NodeID}}, 1)
	x.single("tether_cluster_leases_held", "gauge", "Session leases this node holds.", float64(st.LeasesHeld))
	x.single("tether_cluster_leases_acquired_total", "counter", "Session leases this node took (created, requested or taken over).", float64(st.LeasesAcquired))
	x.single("tether_cluster_leases_lost_total", "counter", "Session leases this node lost (taken by another node, or not renewed in time).", float64(st.LeasesLost))
	x.single("tether_cluster_lease_renew_failures_total", "counter", "Lease renewals that failed (the database could not be reached).", float64(st.RenewFailures))
	x.single("tether_cluster_takeovers_total", "counter", "Sessions taken over from nodes that went away.", float64(st.TakenOver))
	x.single("tether_cluster_takeover_failures_total", "counter", "Sessions taken over whose restore failed (the next request retries).", float64(st.TakeoverFailed))
	x.single("tether_cluster_fencing_rejections_total", "counter", "Sessions whose writes were refused because this node no longer held their leases.", float64(st.Fenced))
	x.single("tether_cluster_feed_events_total", "counter", "Events of every node delivered to this node's streams from the log.", float64(st.FeedDelivered))
	x.single("tether_cluster_feed_gaps_skipped_total", "counter", "Event ids taken by transactions that rolled back: settled, never in the log.", float64(st.FeedGapsSkipped))
	x.family("tether_cluster_notification_lag_seconds", "gauge", "Time from an event's commit to its delivery on this node, over the last 1024 events.")
	x.sample("tether_cluster_notification_lag_seconds", []label{{"quantile", "0.5"}}, st.FeedLagP50.Seconds())
	x.sample("tether_cluster_notification_lag_seconds", []label{{"quantile", "0.99"}}, st.FeedLagP99.Seconds())
}
