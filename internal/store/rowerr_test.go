package store_test

import (
	"context"
	"testing"
)

// TestRowReadsReturnErrorsNotPanics: a one-row read whose statement the
// database cannot prepare (here: the store is closed; in production a
// lost connection or an aborted PostgreSQL transaction) returns an error.
// gorm's Row().Scan, with prepared statements, panicked there instead, and
// the panic of the event writer's goroutine took the daemon down.
func TestRowReadsReturnErrorsNotPanics(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		read func() error
	}{
		{"session event bounds", func() error { _, err := s.SessionEventBounds(ctx, "s"); return err }},
		{"global event bounds", func() error { _, err := s.GlobalEventBounds(ctx); return err }},
		{"max event id", func() error { _, err := s.MaxEventID(ctx); return err }},
		{"global epoch", func() error { _, err := s.GlobalEpoch(ctx); return err }},
		{"last session event", func() error { _, err := s.LastSessionEvent(ctx, "s", "turn.queued"); return err }},
		{"last turn event", func() error { _, _, err := s.LastTurnEvent(ctx, "s", "p", []string{"turn.queued"}); return err }},
		// PostgreSQL only (SQLite refuses it as a cluster call): issue 30's
		// node cut off from its database panicked here 407 times.
		{"session lease", func() error { _, _, err := s.SessionLease(ctx, "s"); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panicked: %v", r)
					}
				}()
				err = tt.read()
			}()
			if err == nil {
				t.Error("got no error from a closed store, want one")
			}
		})
	}
}
