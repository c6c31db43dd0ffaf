// Package cluster lets several tetherd nodes share one PostgreSQL
// database (DESIGN.md section 11, issue 15).
//
// Each live session is owned by exactly one node through a lease: a row
// with the owner's node id, a generation (the fencing token, raised by
// every change of owner) and an expiry, renewed while the node lives.
// Every write a node makes for a session is fenced: the event writer's
// transaction checks, under a share lock, that this node still holds the
// session's lease at the generation it acquired, so a node that lost a
// lease commits nothing more for that session even before it notices. A
// lease that expired (its node died, or was cut off from the database) is
// taken by another node: eagerly for sessions with work in flight (the
// takeover scan), lazily for the others (the next request). Requests for
// a session owned by another live node are forwarded to it; event streams
// are served by any node from the log, which every node tails in the
// commit order of its global ids (Feed), woken by LISTEN/NOTIFY.
//
// The package holds the decisions and the loops; the SQL is the store's
// (store.Store's cluster methods), and what taking a session means
// (attaching its host, interrupting its turn) is the session core's.
package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"
)

// Defaults of Config.
const (
	// DefaultTTL is how long a lease lives without renewal: a dead node's
	// sessions are taken this long after its last renewal.
	DefaultTTL = 10 * time.Second
)

// Config describes this node.
type Config struct {
	// NodeID names this node; unique per running tetherd of the cluster.
	// A node restarted with the same id takes its own leases back at once
	// (the default, DefaultNodeID, is the same across restarts).
	NodeID string
	// URL is where the other nodes reach this node's API (forwarded
	// requests): http(s)://host:port.
	URL string
	// TTL is the lease time to live (default DefaultTTL).
	TTL time.Duration
	// RenewEvery is how often held leases and the node's heartbeat are
	// renewed (default TTL/4).
	RenewEvery time.Duration
	// ScanEvery is how often expired leases of sessions with work in
	// flight are looked for (default TTL/20, at most 500 ms).
	ScanEvery time.Duration
}

// WithDefaults fills what cfg leaves zero and checks the rest.
func (c Config) WithDefaults() (Config, error) {
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.TTL < time.Second {
		return c, fmt.Errorf("cluster: a lease TTL of %s is too short (at least 1s)", c.TTL)
	}
	if c.RenewEvery <= 0 {
		c.RenewEvery = c.TTL / 4
	}
	if c.RenewEvery >= c.TTL/2 {
		return c, fmt.Errorf("cluster: leases renewed every %s would expire (TTL %s): renew at most every TTL/2", c.RenewEvery, c.TTL)
	}
	if c.ScanEvery <= 0 {
		c.ScanEvery = min(c.TTL/20, 500*time.Millisecond)
	}
	if c.NodeID == "" {
		return c, fmt.Errorf("cluster: the node id is required (DefaultNodeID names one)")
	}
	if c.URL == "" {
		return c, fmt.Errorf("cluster: the node's URL (where the other nodes reach its API) is required")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("cluster: the node's URL %q is not an http(s)://host:port address", c.URL)
	}
	return c, nil
}

// DefaultNodeID names a node after its machine and data directory: the
// same across restarts of one daemon (which then takes its sessions back
// at once), different for two daemons of a machine.
func DefaultNodeID(dataDir string) string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(dataDir))
	return fmt.Sprintf("%s-%s", host, hex.EncodeToString(sum[:4]))
}
