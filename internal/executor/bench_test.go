package executor

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/testbin"
)

// BenchmarkRecordPath measures a record's way through the daemon's side
// of a host connection, the hot path of a streaming turn: frames read
// from the socket, decoded, handed to the session's handler in order and
// acknowledged once done. The host side is a scripted peer that writes
// pre-framed records in bursts, so that its cost stays out. Each op is
// one record.
func BenchmarkRecordPath(b *testing.B) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "s")
	if len(sock) > 100 {
		b.Skip("temp dir too deep for a unix socket")
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	peerDone := make(chan error, 1)
	go func() { peerDone <- benchPeer(ln, b.N) }()

	h := NewHost(HostConfig{Name: "bench", Dial: DialUnix(sock), Token: testToken, Logger: testLogger()})
	defer h.Close()
	bh := &benchHandler{want: int64(b.N), all: make(chan struct{})}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testbin.StartCPU()
	if _, err := h.Start(context.Background(), "s1", hostproto.StartPayload{ProfileID: "demo"}, bh); err != nil {
		b.Fatal(err)
	}
	select {
	case <-bh.all:
	case err := <-peerDone: // the connection broke: the daemon would wait for a reconnect for ever
		b.Fatalf("the host's side ended before the daemon had every record: %v", err)
	}
	b.StopTimer()
	cpu.Report(b) // the daemon's and the scripted peer's
	h.Close()
	if err := <-peerDone; err != nil {
		b.Fatal(err)
	}
}

// benchHandler is done with each update at once and says when it has
// seen want of them.
type benchHandler struct {
	n, want int64
	all     chan struct{}
}

func (bh *benchHandler) Update(_ acp.Update, done func()) {
	done()
	if atomic.AddInt64(&bh.n, 1) == bh.want {
		close(bh.all)
	}
}

func (bh *benchHandler) RequestPermission(ctx context.Context, _ acp.PermissionRequest) (acp.PermissionOutcome, error) {
	<-ctx.Done()
	return acp.PermissionOutcome{}, ctx.Err()
}

// benchPeer plays the host: it answers the start, then writes n update
// records of session s1 in bursts of 64 frames, reading the daemon's
// acknowledgements (and answering pings) meanwhile, until the daemon
// closes the connection.
func benchPeer(ln net.Listener, n int) error {
	nc, err := ln.Accept()
	if err != nil {
		return err
	}
	defer nc.Close()
	c, _, err := hostproto.Server(context.Background(), nc, hostproto.ServerConfig{Token: testToken, HostID: "bench"})
	if err != nil {
		return err
	}
	m, err := c.Recv()
	if err != nil {
		return err
	}
	start, ok := m.(*hostproto.Command)
	if !ok || start.Kind != hostproto.CommandStart {
		return fmt.Errorf("got %v, want the start", m)
	}
	if err := c.Send(&hostproto.CommandResult{ID: start.ID, Result: []byte(`{"pid":1}`)}); err != nil {
		return err
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			m, err := c.Recv()
			if err != nil {
				readErr <- nil // the daemon closed: the run is over
				return
			}
			if p, ok := m.(*hostproto.Ping); ok { // a long run outlasts the ping interval
				if err := c.Send(&hostproto.Pong{Nonce: p.Nonce}); err != nil {
					readErr <- err
					return
				}
			}
		}
	}()
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a chunk of an agent's reply, some forty bytes\n"}}}}`)
	var buf []byte
	for off := 1; off <= n; off++ {
		if buf, err = hostproto.AppendRecordFrame(buf, uint64(off), "s1", hostproto.RecordACPUpdate, line, c.MaxFrame()); err != nil {
			return err
		}
		if off%64 == 0 || off == n {
			if err := c.WriteFrames(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return <-readErr
}
