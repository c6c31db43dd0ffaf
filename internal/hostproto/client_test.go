package hostproto

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

func TestNegotiate(t *testing.T) {
	cases := []struct {
		name   string
		a, b   Versions
		want   int
		wantOK bool
	}{
		{"same single", Versions{1, 1}, Versions{1, 1}, 1, true},
		{"overlap picks the highest", Versions{1, 4}, Versions{2, 3}, 3, true},
		{"touching", Versions{1, 2}, Versions{2, 5}, 2, true},
		{"symmetric", Versions{2, 5}, Versions{1, 2}, 2, true},
		{"disjoint", Versions{1, 1}, Versions{2, 3}, 0, false},
		{"inverted range", Versions{3, 1}, Versions{1, 3}, 0, false},
		{"zero range", Versions{}, Versions{1, 1}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Negotiate(tc.a, tc.b)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Negotiate(%s, %s): got %d, %t; want %d, %t", tc.a, tc.b, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestClientRejectsAnswer plays a host answering the hello with raw
// messages the daemon must not accept.
func TestClientRejectsAnswer(t *testing.T) {
	cases := []struct {
		name     string
		answer   Message // nil: the host closes without answering
		want     errcode.Code
		wantText string
	}{
		{"version it does not speak", &Welcome{Version: MaxVersion + 1}, errcode.HostProtocolMismatch, "outside the daemon's"},
		{"not a welcome", &Ping{Nonce: 1}, errcode.HostProtocolError, "answered the hello with a ping"},
		{"refusal without a code", &Refused{Message: "go away"}, errcode.HostProtocolError, "go away"},
		{"refusal with its code", &Refused{Code: errcode.HostUnauthorized, Message: "wrong token"}, errcode.HostUnauthorized, "host refused the connection: wrong token"},
		{"closed without answering", nil, errcode.HostProtocolError, "without answering the hello"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc, raw := pipe(t)
			host := make(chan error, 1)
			go func() {
				c := newConn(raw, Options{})
				if _, err := c.Recv(); err != nil {
					host <- err
					return
				}
				if tc.answer == nil {
					host <- raw.Close()
					return
				}
				host <- c.Send(tc.answer)
			}()
			conn, _, err := Client(context.Background(), cc, clientConfig())
			if herr := <-host; herr != nil {
				t.Fatalf("fake host: %v", herr)
			}
			if conn != nil || !errcode.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("got %v, %v; want %s mentioning %q", conn, err, tc.want, tc.wantText)
			}
		})
	}
}

func TestHandshakeContext(t *testing.T) {
	t.Run("client cancelled while waiting for the answer", func(t *testing.T) {
		cc, raw := pipe(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			_, _ = newConn(raw, Options{}).Recv() // the hello; then nothing
			cancel()
		}()
		if _, _, err := Client(ctx, cc, clientConfig()); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want %v", err, context.Canceled)
		}
	})
	t.Run("server cancelled while waiting for the hello", func(t *testing.T) {
		_, sc := pipe(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, _, err := Server(ctx, sc, serverConfig())
			done <- err
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want %v", err, context.Canceled)
		}
	})
	t.Run("deadline already passed", func(t *testing.T) {
		cc, _ := pipe(t)
		ctx, cancel := context.WithTimeout(context.Background(), -1)
		defer cancel()
		if _, _, err := Client(ctx, cc, clientConfig()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want %v", err, context.DeadlineExceeded)
		}
	})
}

func TestHandshakeConfigErrors(t *testing.T) {
	cc, sc := pipe(t) // nothing is read or written: each fails first
	if _, _, err := Server(context.Background(), sc, ServerConfig{}); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("server without a token: got %v, want an error", err)
	}
	if _, _, err := Server(context.Background(), sc, ServerConfig{Token: "t", Versions: Versions{2, 1}}); err == nil || !strings.Contains(err.Error(), "not a range") {
		t.Errorf("server with versions 2..1: got %v, want an error", err)
	}
	if _, _, err := Client(context.Background(), cc, ClientConfig{Versions: Versions{0, 1}}); err == nil || !strings.Contains(err.Error(), "not a range") {
		t.Errorf("client with versions 0..1: got %v, want an error", err)
	}
}
