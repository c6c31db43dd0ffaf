package testbin

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Frame is one server-sent event as a client reads it: its id (the cursor
// <epoch>:<seq> of a durable event, empty for a control frame), its event
// name and its data lines joined.
type Frame struct {
	ID, Event, Data string
}

// ReadFrames parses an SSE body, calling fn for each frame; a false return
// stops reading. Heartbeat comments are skipped; control frames are passed
// with an empty ID. It returns the read error that ended it (io.EOF at the
// end of the body), nil when fn stopped it.
func ReadFrames(r io.Reader, fn func(Frame) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var f Frame
	var data []string
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if seen {
				f.Data = strings.Join(data, "\n")
				if !fn(f) {
					return nil
				}
			}
			f, data, seen = Frame{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // heartbeat comment
		}
		seen = true
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			f.ID = value
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// Replay is session sid's whole durable log as GET
// /session/{id}/events?follow=false at base serves it (client nil:
// http.DefaultClient), failing tb unless it is served.
func Replay(tb testing.TB, client *http.Client, base, token, sid string) []Frame {
	tb.Helper()
	return replay(tb, client, base+"/session/"+sid+"/events?follow=false", token, "the log of "+sid)
}

// ReplayGlobal is the global stream's whole durable log as GET
// /events?follow=false at base serves it (client nil: http.DefaultClient).
func ReplayGlobal(tb testing.TB, client *http.Client, base, token string) []Frame {
	tb.Helper()
	return replay(tb, client, base+"/events?follow=false", token, "the global log")
}

func replay(tb testing.TB, client *http.Client, url, token, what string) []Frame {
	tb.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("replay %s: %v", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("replay %s: got %d: %s", what, resp.StatusCode, b)
	}
	var out []Frame
	err = ReadFrames(resp.Body, func(f Frame) bool {
		if f.ID != "" {
			out = append(out, f)
		}
		return true
	})
	if err != nil && !errors.Is(err, io.EOF) {
		tb.Fatalf("replay %s: %v", what, err)
	}
	return out
}
