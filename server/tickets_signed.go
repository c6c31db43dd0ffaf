package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Signed tickets: a ticket carries what its redeemer needs — its expiry
// and start cursor — under an HMAC keyed by a secret derived from the
// daemon token, so any daemon holding that token redeems it: the daemon
// that issued it after a restart (a browser's EventSource reconnects with
// the same URL and gives up for good on a 401), and, with several nodes
// behind one balancer, another node (a terminal's WebSocket is then
// forwarded to the session's owner). The key is as durable as the token
// (--token, --token-file or <data-dir>/token), and changing the token
// revokes every outstanding ticket. The stream a ticket opens is in the
// MAC, not in the ticket, so a ticket shown on another stream does not
// verify. The issuing daemon keeps the ticket's hash (its limit of
// outstanding tickets, and the precise refusals); a daemon that has not
// seen it records it when it first redeems it, so a ticket holds one
// connection at a time per daemon.

// ticketKeyLabel separates the ticket key from any other use of the token.
const ticketKeyLabel = "tether stream tickets v1"

// ticketKey derives the tickets' HMAC key from the daemon token.
func ticketKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(ticketKeyLabel))
	return m.Sum(nil)
}

// signTicket makes a ticket for stream: 16 random bytes, the expiry (unix
// ms), the cursor and the MAC of all of it with the stream key. Any cursor
// the API takes (events.ParseCursor: at most 200 characters) fits in the
// ticket parameter's 400.
func signTicket(key []byte, nonce []byte, stream, cursor string, exp time.Time) string {
	b := make([]byte, 0, len(nonce)+8+len(cursor)+sha256.Size)
	b = append(b, nonce...)
	b = binary.BigEndian.AppendUint64(b, uint64(exp.UnixMilli()))
	b = append(b, cursor...)
	b = append(b, ticketMAC(key, b, stream)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func ticketMAC(key, body []byte, stream string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	m.Write([]byte{0})
	m.Write([]byte(stream))
	return m.Sum(nil)
}

// verifyTicket checks a signed ticket for stream and returns its expiry
// and cursor; ok is false for anything that does not verify (another
// stream, another cluster's key, garbage).
func verifyTicket(key []byte, tok, stream string) (exp time.Time, cursor string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < ticketNonce+8+sha256.Size {
		return time.Time{}, "", false
	}
	body, mac := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !hmac.Equal(mac, ticketMAC(key, body, stream)) {
		return time.Time{}, "", false
	}
	ms := binary.BigEndian.Uint64(body[ticketNonce : ticketNonce+8])
	return time.UnixMilli(int64(ms)), string(body[ticketNonce+8:]), true
}

// ticketNonce is the random part of a ticket, in bytes.
const ticketNonce = 16
