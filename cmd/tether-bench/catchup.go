package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/tether/tether/internal/events"
)

// catchUpResult is the replay of a log n events long to a reconnecting
// client, through tetherd's SSE endpoint.
type catchUpResult struct {
	events   int
	fill     time.Duration // writing the log (not part of the figure)
	raw      time.Duration // minimal client: request to replay_complete
	r3labs   time.Duration // r3labs/sse Go client: request to replay_complete
	r3events int
	r3lastID string
}

// catchUp fills one session with n events and replays them with
// follow=false, first with the minimal client, then with r3labs/sse's
// client (which also shows that it consumes the stream unchanged).
func catchUp(ctx context.Context, n int) (catchUpResult, error) {
	res := catchUpResult{events: n}
	dir, err := os.MkdirTemp("", "tether-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	d, err := startDaemon(ctx, dir, 1, events.HubConfig{})
	if err != nil {
		return res, err
	}
	defer d.Close()
	sid := d.Sessions[0]
	t0 := time.Now()
	if err := d.fill(ctx, sid, n); err != nil {
		return res, err
	}
	res.fill = time.Since(t0)
	u := d.streamURL(sid) + "?follow=false"

	// Minimal client: count id: lines until replay_complete.
	t0 = time.Now()
	got, err := replayRaw(ctx, u)
	if err != nil {
		return res, err
	}
	res.raw = time.Since(t0)
	if got != n {
		return res, fmt.Errorf("raw replay: %d events, want %d", got, n)
	}

	// r3labs/sse client: the handler sees every frame; LastEventID
	// tracks our cursors because only durable events carry an id.
	c := sse.NewClient(u)
	c.Headers["Authorization"] = "Bearer " + token
	var done time.Duration
	t0 = time.Now()
	err = c.SubscribeRawWithContext(ctx, func(m *sse.Event) {
		switch string(m.Event) {
		case events.ReplayComplete:
			done = time.Since(t0)
		case events.MessageChunk:
			res.r3events++
		}
	})
	if err != nil {
		return res, err
	}
	res.r3labs = done
	if id, ok := c.LastEventID.Load().([]byte); ok {
		res.r3lastID = string(id)
	}
	return res, nil
}

func replayRaw(ctx context.Context, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return n, fmt.Errorf("stream ended before replay_complete after %d events: %w", n, err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			n++
		case bytes.Equal(line, []byte("event: "+events.ReplayComplete+"\n")):
			return n, nil
		}
	}
}
