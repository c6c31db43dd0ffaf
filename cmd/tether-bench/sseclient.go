package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// subscriber is a measuring SSE client. It parses just enough of the
// stream (id: and data: lines) to time every event that carries a
// "sentAt" stamp, so that on a 2-core machine the clients take as little
// CPU from the server under test as possible. (r3labs/sse's client
// allocates per line; it is used for the catch-up figure instead.)
type subscriber struct {
	mu      sync.Mutex
	lat     []time.Duration
	firstID string
	last    time.Time      // when the latest stamped event arrived
	maxGap  time.Duration  // longest silence between stamped events
	frames  map[string]int // control frames seen, by type
	// reconnects counts streams the server ended while the run went on.
	reconnects int
	err        error
}

// follow connects and records events until ctx ends. ready is closed once
// the first response's headers arrived (the stream is subscribed). Like
// EventSource, it reconnects with Last-Event-ID when the server ends the
// stream (e.g. after stream_lagged), but at once rather than after retry:.
func (s *subscriber) follow(ctx context.Context, client *http.Client, u string, header http.Header, ready chan<- struct{}) {
	defer func() {
		if ready != nil {
			close(ready)
		}
	}()
	lastID := ""
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			s.mu.Lock()
			s.reconnects++
			s.mu.Unlock()
		}
		h := header.Clone()
		if lastID != "" {
			h.Set("Last-Event-ID", lastID)
		}
		err := s.stream(ctx, client, u, h, &ready, &lastID)
		if err != nil {
			if ctx.Err() == nil {
				s.fail(err)
			}
			return
		}
	}
}

// stream reads one response until it ends (nil) or fails.
func (s *subscriber) stream(ctx context.Context, client *http.Client, u string, h http.Header, ready *chan<- struct{}, lastID *string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header = h
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	if *ready != nil {
		close(*ready)
		*ready = nil
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		now := time.Now()
		switch {
		case bytes.HasPrefix(line, []byte("data: ")):
			if t, ok := sentAt(line); ok {
				s.record(now, time.Duration(now.UnixNano()-t))
			}
		case bytes.HasPrefix(line, []byte("id: ")):
			*lastID = string(bytes.TrimSpace(line[4:]))
			s.mu.Lock()
			if s.firstID == "" {
				s.firstID = *lastID
			}
			s.mu.Unlock()
		case bytes.HasPrefix(line, []byte("event: ")):
			t := string(bytes.TrimSpace(line[7:]))
			if t != "message.chunk" {
				s.mu.Lock()
				if s.frames == nil {
					s.frames = map[string]int{}
				}
				s.frames[t]++
				s.mu.Unlock()
			}
		}
	}
}

func (s *subscriber) record(now time.Time, d time.Duration) {
	s.mu.Lock()
	if !s.last.IsZero() {
		s.maxGap = max(s.maxGap, now.Sub(s.last))
	}
	s.last = now
	s.lat = append(s.lat, d)
	s.mu.Unlock()
}

func (s *subscriber) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// count is how many stamped events arrived so far.
func (s *subscriber) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lat)
}

// finish closes the gap measurement at the end of the run: a subscriber
// that went silent early has been silent until end.
func (s *subscriber) finish(end time.Time) {
	s.mu.Lock()
	if !s.last.IsZero() {
		s.maxGap = max(s.maxGap, end.Sub(s.last))
	}
	s.mu.Unlock()
}

// sentAt extracts the "sentAt" stamp without decoding the JSON.
func sentAt(b []byte) (int64, bool) {
	const key = `"sentAt":`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(key):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// stall opens an SSE stream and never reads from it: the server's writes
// fill the socket buffers and then block. The connection stays open until
// the returned function is called.
func stall(rawURL string, header http.Header) (func(), error) {
	conn, err := dialSSE(rawURL, header, stallRcvBuf)
	if err != nil {
		return nil, err
	}
	return func() { conn.Close() }, nil
}

// dialSSE sends an SSE request over a raw connection and returns it
// unread, so the caller decides whether (and how much) to read.
func dialSSE(rawURL string, header http.Header, rcvBuf int) (net.Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	if rcvBuf > 0 {
		// Set before the handshake, so the advertised window is small too.
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf)
			})
			return errors.Join(err, serr)
		}
	}
	conn, err := d.Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n", u.RequestURI(), u.Host)
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(req.Bytes()); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// newClient is an HTTP client for many long-lived streams to one host.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}
