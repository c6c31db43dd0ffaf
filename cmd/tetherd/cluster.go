package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tether/tether/internal/cluster"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/server"
)

// clusterOptions are the flags of a node of several that share one
// PostgreSQL database (docs/scale-out.md).
type clusterOptions struct {
	nodeID  string
	nodeURL string
	ttl     time.Duration
}

func (c *clusterOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.nodeID, "node-id", env("TETHER_NODE_ID", ""), "this node's id among the nodes sharing --database (default: the host name and a hash of --data-dir, the same across restarts; a node restarted with its id takes its sessions back at once) [TETHER_NODE_ID]")
	fs.StringVar(&c.nodeURL, "node-url", env("TETHER_NODE_URL", ""), "where the other nodes reach this node's API to forward a session's requests to it (default: http://--addr, when --addr names a host) [TETHER_NODE_URL]")
	fs.DurationVar(&c.ttl, "lease-ttl", cluster.DefaultTTL, "how long a node's lease of a session lasts without renewal: a dead node's sessions are taken over this long after its last renewal")
}

// config is the cluster.Config of a node listening on addr with its data
// in dataDir.
func (c clusterOptions) config(addr, dataDir string) (cluster.Config, error) {
	u := c.nodeURL
	if u == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return cluster.Config{}, fmt.Errorf("--addr %q: %w", addr, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return cluster.Config{}, errors.New("--node-url is required when --addr listens on every address: the other nodes must know where to reach this one")
		}
		u = "http://" + addr
	}
	id := c.nodeID
	if id == "" {
		id = cluster.DefaultNodeID(dataDir)
	}
	return cluster.Config{NodeID: id, URL: u, TTL: c.ttl}.WithDefaults()
}

// node is this daemon's part in a cluster: its leases, the writer's
// fencing, the feed of every node's events and the takeover scan.
type node struct {
	cfg      cluster.Config
	leases   *cluster.Leases
	feed     *cluster.Feed
	writes   *cluster.Writes
	takeover *cluster.Takeover
	dbURL    string
}

// newNode registers this node (its URL is what the others forward to)
// before anything acquires a lease; hub receives every node's events.
func newNode(ctx context.Context, cfg cluster.Config, dbURL string, st *store.Store, hub *events.Hub, logger *slog.Logger) (*node, error) {
	n := &node{cfg: cfg, dbURL: dbURL, leases: cluster.NewLeases(cfg, st, logger)}
	if err := st.RegisterNode(ctx, cfg.NodeID, cfg.URL); err != nil {
		return nil, err
	}
	feed, err := cluster.NewFeed(ctx, st, hub.Publish, cluster.FeedConfig{Logger: logger})
	if err != nil {
		return nil, err
	}
	n.feed, n.writes = feed, cluster.NewWrites(n.leases, feed)
	logger.Info("cluster node", "node", cfg.NodeID, "url", cfg.URL, "leaseTTL", cfg.TTL)
	return n, nil
}

// startLeases hands lost leases to mgr (their sessions are unloaded) and
// starts the lease renewal: before the reconciliation, which takes leases.
func (n *node) startLeases(sup *errgroup.Group, ctx context.Context, mgr *sessions.Manager) {
	n.leases.OnLost(mgr.Drop)
	sup.Go(func() error { return n.leases.Run(ctx) })
}

// startFollowing runs the rest of the node's loops under sup: the LISTEN
// connection and the feed of every node's events, and the takeover of
// sessions whose owner went away.
func (n *node) startFollowing(sup *errgroup.Group, ctx context.Context, mgr *sessions.Manager, logger *slog.Logger) {
	n.takeover = cluster.NewTakeover(n.leases, mgr.TakeOver)
	rebalance := cluster.NewRebalance(n.leases, mgr.Movable, mgr.HandOver)
	sup.Go(func() error { rebalance.Run(ctx); return nil })
	sup.Go(func() error { cluster.Listen(ctx, n.dbURL, n.feed.Wake, logger); return nil })
	sup.Go(func() error { n.feed.Run(ctx); return nil })
	sup.Go(func() error { n.takeover.Run(ctx); return nil })
}

// ownership is the sessions' lease table of a node (nil alone).
func ownership(n *node) sessions.Ownership {
	if n == nil {
		return nil
	}
	return n.leases
}

// generation is the fencing token host commands of a session carry: the
// generation of this node's lease on it, 0 when it holds none (a host
// that saw a newer one then refuses the command). Nil alone.
func generation(n *node) func(string) uint64 {
	if n == nil {
		return nil
	}
	return func(sessionID string) uint64 {
		gen, _ := n.leases.Generation(sessionID)
		return uint64(gen)
	}
}

// router is the server's view of a node's leases (nil alone).
func router(n *node) server.Router {
	if n == nil {
		return nil
	}
	return n.leases
}

// eventHorizon is where a cluster's global ids are settled (nil alone:
// the one writer commits them in order).
func eventHorizon(n *node, st *store.Store) func(context.Context) (int64, error) {
	if n == nil {
		return nil
	}
	return st.EventHorizon
}

// ready is /ready's check: a node is ready while its leases are renewed.
func ready(n *node) func() error {
	if n == nil {
		return nil
	}
	return n.leases.Healthy
}

// clusterStats reports a node's counters for /metrics (nil alone).
func clusterStats(n *node) func() server.ClusterStats {
	if n == nil {
		return nil
	}
	return func() server.ClusterStats {
		l, f := n.leases.Stats(), n.feed.Stats()
		st := server.ClusterStats{NodeID: n.cfg.NodeID, LeasesHeld: l.Held, LeasesAcquired: l.Acquired, LeasesLost: l.Lost,
			RenewFailures: l.RenewFailures, Fenced: n.writes.Fenced(), FeedDelivered: f.Delivered, FeedGapsSkipped: f.GapsSkipped,
			FeedLagP50: f.LagP50, FeedLagP99: f.LagP99}
		if n.takeover != nil {
			st.TakenOver, st.TakeoverFailed = n.takeover.Taken()
		}
		return st
	}
}

// openStore opens the daemon's database: SQLite in the data dir, or the
// PostgreSQL server --database names.
func openStore(ctx context.Context, o options) (*store.Store, error) {
	if o.database != "" {
		return store.OpenPostgres(ctx, o.database)
	}
	return store.Open(ctx, filepath.Join(o.dataDir, "tether.db"))
}
