package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Signed tickets: with several nodes behind one balancer, a ticket asked
// of one node opens a stream (or a terminal's WebSocket, forwarded to the
// session's owner) on another. So in a cluster a ticket carries what its
// redeemer needs — its expiry and start cursor — under an HMAC keyed by a
// secret every node derives from the daemon token they share; the stream
// it opens is in the MAC, not in the ticket, so a ticket shown on another
// stream does not verify. The issuing node still keeps the ticket's hash
// (its limit of outstanding tickets, and the precise refusals); another
// node that redeems it records it then, so a ticket holds one connection
// at a time per node.

// ticketKeyLabel separates the ticket key from any other use of the token.
const ticketKeyLabel = "tether stream tickets v1"

// ticketKey derives the tickets' HMAC key from the daemon token.
func ticketKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(ticketKeyLabel))
	return m.Sum(nil)
}

// maxSignedCursor bounds the cursor a signed ticket carries, so that the
// ticket stays within the query parameter's 200 characters.
const maxSignedCursor = 48

// signTicket makes a ticket for stream: 16 random bytes, the expiry (unix
// ms), the cursor and the MAC of all of it with the stream key. A cursor
// too long to carry is left out (the issuing node still knows it).
func signTicket(key []byte, nonce []byte, stream, cursor string, exp time.Time) string {
	if len(cursor) > maxSignedCursor {
		cursor = ""
	}
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
