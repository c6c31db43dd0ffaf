package cluster_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestRefusedNodeLeavesNoRow: a node that registers and then cannot
// serve (its address is taken) exits with an error and leaves no row in
// the cluster's table of nodes, where it would look alive to the others
// until its heartbeat aged; a node that starts is listed.
func TestRefusedNodeLeavesNoRow(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	c.start("ok")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(c.dir, "refused")
	c.writeAgents(dir)
	cmd := exec.Command(c.bin, "serve", "--data-dir", dir, "--addr", busy.Addr().String(), "--token-file", filepath.Join(c.dir, "token"),
		"--database", c.db, "--node-id", "refused", "--host-dir", c.hostDir)
	cmd.Env = append(os.Environ(), "TETHER_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a node on a taken address: got exit 0, want an error:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	conn := c.sql()
	nodes := map[string]bool{}
	rows, err := conn.Query(ctx, "SELECT id FROM cluster_nodes")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		nodes[id] = true
	}
	if !nodes["ok"] || nodes["refused"] {
		t.Logf("refused node said:\n%s", out)
		t.Errorf("cluster_nodes: got %v, want ok and not refused", nodes)
	}
}
