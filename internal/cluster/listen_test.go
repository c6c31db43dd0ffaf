package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether/tether/internal/cluster"
	"github.com/tether/tether/internal/testbin"
)

// TestListenSurvivesABrokenConnection: a node's LISTEN connection wakes
// its feed on every notification; when the server ends that connection
// (a restart, a failover, an administrator), Listen opens it again and
// wakes the feed once more at once, so what was notified while it was
// down is read from the log, and later notifications wake it again.
func TestListenSurvivesABrokenConnection(t *testing.T) {
	db := testbin.FreshPostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	wakes := make(chan struct{}, 64)
	go func() {
		defer close(done)
		cluster.Listen(ctx, db, func() { wakes <- struct{}{} }, nil)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	admin, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	waitWake := func(what string) {
		t.Helper()
		select {
		case <-wakes:
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake-up for %s", what)
		}
	}
	notify := func() {
		t.Helper()
		if _, err := admin.Exec(context.Background(), "SELECT pg_notify($1, '42')", cluster.Channel); err != nil {
			t.Fatal(err)
		}
	}
	listener := func() int32 {
		t.Helper()
		var pid int32
		err := admin.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN `+cluster.Channel+`'`).Scan(&pid)
		if err != nil {
			t.Fatalf("the listening backend: %v", err)
		}
		return pid
	}

	waitWake("the first connection")
	notify()
	waitWake("a notification")
	first := listener()
	var ok bool
	if err := admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", first).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the listening backend %d: %v %v", first, ok, err)
	}
	waitWake("the connection opened again")
	if again := listener(); again == first {
		t.Fatalf("the listening backend after it was terminated: got the same pid %d", again)
	}
	for len(wakes) > 0 {
		<-wakes
	}
	notify()
	waitWake("a notification on the new connection")
}
