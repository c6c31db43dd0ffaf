package hostproto

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

const testToken = "correct horse battery staple"

func clientConfig() ClientConfig {
	return ClientConfig{Token: testToken, DaemonID: "daemon-1", DaemonVersion: "v1.2.3"}
}

func serverConfig() ServerConfig {
	return ServerConfig{Token: testToken, HostID: "host-1", HostVersion: "v1.2.4",
		Sessions: func() []string { return []string{"s1", "s2"} }}
}

// side is what one side's handshake returned.
type side struct {
	conn    *Conn
	welcome Welcome
	hello   Hello
	err     error
}

// handshake runs Client on cc and Server on sc at once and returns both
// outcomes.
func handshake(t *testing.T, cc, sc net.Conn, ccfg ClientConfig, scfg ServerConfig) (client, server side) {
	t.Helper()
	done := make(chan side)
	go func() {
		c, h, err := Server(context.Background(), sc, scfg)
		done <- side{conn: c, hello: h, err: err}
	}()
	c, w, err := Client(context.Background(), cc, ccfg)
	return side{conn: c, welcome: w, err: err}, <-done
}

func pipe(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "host.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	cc, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { cc.Close(); sc.Close() })
	return cc, sc
}

func TestHandshakeAccepts(t *testing.T) {
	cases := []struct {
		name        string
		transport   func(*testing.T) (net.Conn, net.Conn)
		client, srv Versions
		wantVersion int
	}{
		{name: "pipe", transport: pipe, wantVersion: MaxVersion},
		{name: "unix socket", transport: unixPair, wantVersion: MaxVersion},
		{name: "highest common version", transport: pipe, client: Versions{1, 3}, srv: Versions{2, 5}, wantVersion: 3},
		{name: "newer daemon, older host", transport: pipe, client: Versions{1, 2}, srv: Versions{1, 1}, wantVersion: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := tc.transport(t)
			ccfg, scfg := clientConfig(), serverConfig()
			ccfg.Versions, scfg.Versions = tc.client, tc.srv
			client, server := handshake(t, cc, sc, ccfg, scfg)
			if client.err != nil || server.err != nil {
				t.Fatalf("handshake: client %v, server %v", client.err, server.err)
			}
			wantW := Welcome{Version: tc.wantVersion, HostID: "host-1", HostVersion: "v1.2.4", Sessions: []string{"s1", "s2"}}
			if !reflect.DeepEqual(client.welcome, wantW) {
				t.Fatalf("welcome: got %+v, want %+v", client.welcome, wantW)
			}
			cv := tc.client.orSupported()
			wantH := Hello{MinVersion: cv.Min, MaxVersion: cv.Max, Token: testToken, DaemonID: "daemon-1", DaemonVersion: "v1.2.3"}
			if server.hello != wantH {
				t.Fatalf("hello: got %+v, want %+v", server.hello, wantH)
			}
			if client.conn.Version() != tc.wantVersion || server.conn.Version() != tc.wantVersion {
				t.Fatalf("versions: client %d, server %d, want %d", client.conn.Version(), server.conn.Version(), tc.wantVersion)
			}
			// The connection carries messages both ways afterwards.
			cmd := &Command{ID: "c-1", Kind: CommandNew, SessionID: "s-1", Payload: json.RawMessage(`{"cwd":"/w"}`)}
			go func() { _ = client.conn.Send(cmd) }()
			if m, err := server.conn.Recv(); err != nil || !reflect.DeepEqual(m, Message(cmd)) {
				t.Fatalf("host received %#v, %v; want %#v", m, err, cmd)
			}
			res := &CommandResult{ID: "c-1", Result: json.RawMessage(`{}`)}
			go func() { _ = server.conn.Send(res) }()
			if m, err := client.conn.Recv(); err != nil || !reflect.DeepEqual(m, Message(res)) {
				t.Fatalf("daemon received %#v, %v; want %#v", m, err, res)
			}
		})
	}
}

func TestHandshakeRefuses(t *testing.T) {
	cases := []struct {
		name        string
		token       string
		client, srv Versions
		want        errcode.Code
		wantText    string
	}{
		{name: "wrong token", token: "guess", want: errcode.HostUnauthorized, wantText: "wrong token"},
		{name: "empty token", token: "", want: errcode.HostUnauthorized, wantText: "wrong token"},
		{name: "token prefix", token: testToken[:5], want: errcode.HostUnauthorized, wantText: "wrong token"},
		{name: "daemon too new", token: testToken, client: Versions{2, 3}, srv: Versions{1, 1}, want: errcode.HostProtocolMismatch, wantText: "daemon speaks protocol versions 2..3, host 1..1"},
		{name: "daemon too old", token: testToken, client: Versions{1, 1}, srv: Versions{2, 2}, want: errcode.HostProtocolMismatch, wantText: "daemon speaks protocol versions 1..1, host 2..2"},
		{name: "wrong token before mismatch", token: "guess", client: Versions{7, 7}, want: errcode.HostUnauthorized, wantText: "wrong token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := pipe(t)
			ccfg, scfg := clientConfig(), serverConfig()
			ccfg.Token, ccfg.Versions, scfg.Versions = tc.token, tc.client, tc.srv
			client, server := handshake(t, cc, sc, ccfg, scfg)
			for who, s := range map[string]side{"client": client, "server": server} {
				if !errcode.Is(s.err, tc.want) || !strings.Contains(s.err.Error(), tc.wantText) {
					t.Errorf("%s: got %v, want %s mentioning %q", who, s.err, tc.want, tc.wantText)
				}
				if s.conn != nil {
					t.Errorf("%s: got a Conn from a refused handshake", who)
				}
			}
		})
	}
}

// TestHostRefusesFirstFrame plays a daemon writing raw bytes: the host
// answers what it can with a Refused and returns the same code.
func TestHostRefusesFirstFrame(t *testing.T) {
	hello := func(min, max int) []byte {
		body, _ := Encode(&Hello{MinVersion: min, MaxVersion: max, Token: testToken})
		return frameOf(uint32(len(body)), string(body))
	}
	cases := []struct {
		name      string
		chunks    [][]byte
		close     bool // the daemon closes after its bytes: it reads no answer
		want      errcode.Code
		wantText  string
		wantCause error
	}{
		{name: "oversized", chunks: [][]byte{frameOf(helloMaxFrame+1, "")}, want: errcode.HostFrameTooLarge, wantText: "past the limit of 65536"},
		{name: "not json", chunks: [][]byte{frameOf(5, "hello")}, want: errcode.HostProtocolError, wantText: "not a JSON object"},
		{name: "unknown type", chunks: [][]byte{frameOf(17, `{"type":"hallo"}`+" ")}, want: errcode.HostProtocolError, wantText: `unknown message type "hallo"`},
		{name: "not a hello", chunks: [][]byte{frameOf(15, `{"type":"ping"}`)}, want: errcode.HostProtocolError, wantText: "the first frame must be a hello, got ping"},
		{name: "versions not a range", chunks: [][]byte{hello(3, 1)}, want: errcode.HostProtocolError, wantText: "versions 3..1 are not a range"},
		{name: "version zero", chunks: [][]byte{hello(0, 0)}, want: errcode.HostProtocolError, wantText: "versions 0..0 are not a range"},
		{name: "truncated", chunks: [][]byte{frameOf(40, `{"type":"hel`)}, close: true, want: errcode.HostProtocolError, wantText: "inside a frame (12 of 40 bytes)", wantCause: io.ErrUnexpectedEOF},
		{name: "closed before a hello", close: true, want: errcode.HostProtocolError, wantText: "before its hello", wantCause: io.EOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, sc := pipe(t)
			done := make(chan error, 1)
			go func() {
				_, _, err := Server(context.Background(), sc, serverConfig())
				done <- err
			}()
			written := make(chan struct{})
			go func() {
				defer close(written)
				for _, c := range tc.chunks {
					if _, err := raw.Write(c); err != nil {
						return
					}
				}
				if tc.close {
					raw.Close()
				}
			}()
			if !tc.close {
				m, err := newConn(raw, Options{}).Recv()
				r, ok := m.(*Refused)
				if err != nil || !ok || r.Code != tc.want || !strings.Contains(r.Message, tc.wantText) {
					t.Errorf("daemon read %#v, %v; want a refusal %s mentioning %q", m, err, tc.want, tc.wantText)
				}
			}
			err := <-done
			<-written
			if !errcode.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("host: got %v, want %s mentioning %q", err, tc.want, tc.wantText)
			}
			if tc.wantCause != nil && !errors.Is(err, tc.wantCause) {
				t.Fatalf("host: %v does not wrap %v", err, tc.wantCause)
			}
		})
	}
}
