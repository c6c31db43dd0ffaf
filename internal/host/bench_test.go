package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
	"github.com/tether/tether/internal/testbin"
)

// BenchmarkRecordPath measures a record's way through the host, the hot
// path of a streaming turn: an agent's line queued (as the agent's reader
// does), appended to the outbox in bursts, framed by the connection's
// writer and read by a daemon that acknowledges as tetherd does. Each op
// is one record; the agent process itself is left out.
func BenchmarkRecordPath(b *testing.B) {
	for _, sessions := range []int{1, 4} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) { benchRecordPath(b, sessions) })
	}
}

func benchRecordPath(b *testing.B, n int) {
	dir, err := os.MkdirTemp("", "hb") // short: unix socket paths are bounded
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h, err := New(Config{DataDir: dir, Token: "t", Linger: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Outbox: hostOutbox()})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-served
		_ = h.Close()
	}()
	ss := make([]*session, n)
	for i := range ss {
		id := fmt.Sprintf("s%d", i)
		s, err := h.openSession(id, meta{SessionID: id})
		if err != nil {
			b.Fatal(err)
		}
		h.register(s)
		ss[i] = s
	}
	nc, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		b.Fatal(err)
	}
	conn, _, err := hostproto.Client(ctx, nc, hostproto.ClientConfig{Token: "t", Options: hostproto.Options{ReuseRecords: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, s := range ss {
		if err := conn.Send(&hostproto.Command{ID: "attach-" + s.id, Kind: hostproto.CommandAttach, SessionID: s.id}); err != nil {
			b.Fatal(err)
		}
	}
	got := make(chan error, 1)
	want := b.N * n
	go func() { got <- readAndAck(conn, n, want) }()
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a chunk of an agent's reply, some forty bytes\n"}}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testbin.StartCPU()
	for i := range b.N {
		for _, s := range ss {
			s.q.pushLine(hostproto.RecordACPUpdate, line)
			if i%16 == 15 || i == b.N-1 { // the reader flushes a burst
				s.flush()
			}
		}
	}
	if err := <-got; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu.Report(b) // the host's and the reading daemon's
}

// hostOutbox is the outbox as `tetherd host` runs it.
func hostOutbox() outbox.Config { return outbox.Config{SyncDelay: DefaultOutboxSyncDelay} }

// readAndAck reads until want records arrived, acknowledging every 256th
// record of a session as the daemon's AckEvery does.
func readAndAck(conn *hostproto.Conn, sessions, want int) error {
	seen := 0
	results := 0
	for seen < want || results < sessions {
		m, err := conn.Recv()
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *hostproto.Record:
			seen++
			if m.Offset%256 == 0 {
				if err := conn.Send(&hostproto.Ack{SessionID: m.SessionID, Offset: m.Offset}); err != nil {
					return err
				}
			}
		case *hostproto.CommandResult:
			if m.Error != nil {
				return m.Err()
			}
			results++
		case *hostproto.Ping:
			_ = conn.Send(&hostproto.Pong{Nonce: m.Nonce})
		}
	}
	return nil
}
