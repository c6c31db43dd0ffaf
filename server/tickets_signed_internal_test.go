package server

import (
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// TestSignedTickets: a ticket one daemon issued opens its stream on any
// daemon that shares the token (the same one restarted, another node of
// a cluster), and nothing else.
func TestSignedTickets(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	key := ticketKey("shared-token")
	issuer := newStreamTickets(time.Minute, 10, clock, key)
	stream := streamKey("s1", "", "")
	tok, _, err := issuer.issue(stream, "ep:7")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		redeemer *streamTickets
		stream   string
		at       time.Duration
		wantCode errcode.Code
	}{
		{"another node, same token", newStreamTickets(time.Minute, 10, clock, key), stream, 0, ""},
		{"the issuer restarted", newStreamTickets(time.Minute, 10, clock, ticketKey("shared-token")), stream, 0, ""},
		{"another node, another stream", newStreamTickets(time.Minute, 10, clock, key), streamKey("s2", "", ""), 0, errcode.StreamTicketInvalid},
		{"another node, expired", newStreamTickets(time.Minute, 10, clock, key), stream, time.Minute, errcode.StreamTicketExpired},
		{"another cluster's key", newStreamTickets(time.Minute, 10, clock, ticketKey("other-token")), stream, 0, errcode.StreamTicketInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at := now.Add(tc.at)
			tc.redeemer.now = func() time.Time { return at }
			cursor, release, err := tc.redeemer.redeem(tok, tc.stream)
			if tc.wantCode != "" {
				if !errcode.Is(err, tc.wantCode) {
					t.Fatalf("got %v, want %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cursor != "ep:7" {
				t.Errorf("got cursor %q, want ep:7", cursor)
			}
			if _, _, err := tc.redeemer.redeem(tok, tc.stream); !errcode.Is(err, errcode.StreamTicketInUse) {
				t.Errorf("a second connection on the same node: got %v, want stream_ticket_in_use", err)
			}
			release()
		})
	}
	t.Run("tampered", func(t *testing.T) {
		b := []byte(tok)
		b[5] ^= 1
		if _, _, ok := verifyTicket(key, string(b), stream); ok {
			t.Error("a changed ticket verified")
		}
	})
}

// TestSignedTicketCarriesAnyCursor: the longest cursor the API takes
// rides in the ticket, within the ticket parameter's 400 characters, so a
// daemon that did not issue the ticket starts its first connection there
// too.
func TestSignedTicketCarriesAnyCursor(t *testing.T) {
	key := ticketKey("token")
	cursor := strings.Repeat("f", 197) + ":99" // events.ParseCursor's 200
	tok, _, err := newStreamTickets(time.Minute, 10, nil, key).issue("s", cursor)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > 400 {
		t.Errorf("got a ticket of %d characters, want at most 400 (the query parameter's limit)", len(tok))
	}
	got, release, err := newStreamTickets(time.Minute, 10, nil, key).redeem(tok, "s")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if got != cursor {
		t.Errorf("got cursor %q, want %q", got, cursor)
	}
}
