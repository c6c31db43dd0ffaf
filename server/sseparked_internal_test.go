package server

import (
	"io"
	"net"
	"testing"
)

// TestChunkSink checks a parked stream's framing on both of its paths:
// writev on a TCP connection, one buffer on any other (a TLS one, where
// each Write is a record); an empty write writes nothing (a zero-length
// chunk would end the body).
func TestChunkSink(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tcpClient, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tcpServer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	pipeServer, pipeClient := net.Pipe()
	for _, c := range []struct {
		name           string
		server, client net.Conn
		vector         bool
	}{
		{"tcp", tcpServer, tcpClient, true},
		{"other", pipeServer, pipeClient, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := newChunkSink(c.server)
			if sink.vector != c.vector {
				t.Fatalf("got writev %v, want %v", sink.vector, c.vector)
			}
			go func() {
				for _, p := range []string{"data: a\n\n", "", "data: {\"b\":1}\n\n"} {
					if n, err := sink.Write([]byte(p)); n != len(p) || err != nil {
						t.Errorf("Write(%q): got %d, %v", p, n, err)
					}
				}
				c.server.Close()
			}()
			got, _ := io.ReadAll(c.client)
			if want := "9\r\ndata: a\n\n\r\nf\r\ndata: {\"b\":1}\n\n\r\n"; string(got) != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
