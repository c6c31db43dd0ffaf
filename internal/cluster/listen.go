package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is the PostgreSQL notification channel the event writers
// NOTIFY in their commits (the payload is the last global id written);
// every node LISTENs on it to wake its Feed.
const Channel = "tether_events"

// Listen keeps a LISTEN connection to the database at url open until ctx
// ends and calls wake for every notification, and once after each
// (re)connection: what was notified while it was down is read from the
// log then. A broken connection is opened again with a backoff up to 5 s.
func Listen(ctx context.Context, url string, wake func(), log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, url, wake, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		log.Warn("cluster: the LISTEN connection broke; the feed polls until it is back", "err", err, "retryIn", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func listenOnce(ctx context.Context, url string, wake, connected func()) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	connected()
	wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}
