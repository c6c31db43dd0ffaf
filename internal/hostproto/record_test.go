package hostproto

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

// generalRecord decodes body as the general path does.
func generalRecord(body []byte) (*Record, error) {
	var head struct {
		Type Type `json:"type"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Type != TypeRecord {
		return nil, errcode.New(errcode.HostProtocolError, "not a record")
	}
	var r Record
	err := json.Unmarshal(body, &r)
	return &r, err
}

// TestRecordCodec: the hand-written record body is Encode's, byte for
// byte, it decodes to the record it came from, and frames the reader is
// not sure of go the general way with the same result.
func TestRecordCodec(t *testing.T) {
	line := json.RawMessage(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x}\"{"}}}}`)
	cases := []struct {
		name string
		rec  Record
		// hand: the hand-written codec takes it both ways.
		hand bool
	}{
		{"update", Record{Offset: 1, SessionID: "s-1", Kind: RecordUpdate, Payload: json.RawMessage(`{"kind":"agent_message_chunk","text":"hi"}`)}, true},
		{"agent's line", Record{Offset: 18446744073709551615, SessionID: "0f.A_b-9", Kind: RecordACPUpdate, Payload: line}, true},
		{"no payload", Record{Offset: 3, SessionID: "s", Kind: RecordExit}, false},
		{"session id that needs escaping", Record{Offset: 4, SessionID: `a"b`, Kind: RecordUpdate, Payload: json.RawMessage(`{}`)}, false},
		{"array payload", Record{Offset: 5, SessionID: "s", Kind: RecordUpdate, Payload: json.RawMessage(`[1]`)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Encode(&tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			frame, err := appendMessageFrame([]byte("x"), &tc.rec, DefaultMaxFrame)
			if err != nil {
				t.Fatal(err)
			}
			if got := frame[1+frameHeader:]; !bytes.Equal(got, want) {
				t.Fatalf("frame body:\n got %s\nwant %s", got, want)
			}
			if _, ok := decodeRecord(want, nil); ok != tc.hand {
				t.Errorf("hand-written reader took it: got %v, want %v", ok, tc.hand)
			}
			got, err := Decode(want)
			if err != nil {
				t.Fatalf("Decode(%s): %v", want, err)
			}
			if !reflect.DeepEqual(got, &tc.rec) {
				t.Fatalf("Decode: got %#v, want %#v", got, &tc.rec)
			}
		})
	}
}

// TestRecordReaderFallsBack: bodies that look like the hand-written
// layout but are not quite it decode as the general path decodes them.
func TestRecordReaderFallsBack(t *testing.T) {
	cases := []struct{ name, body string }{
		{"member after the payload", `{"type":"record","offset":2,"sessionId":"s","kind":"update","payload":{"a":1},"later":true}`},
		{"leading zero", `{"type":"record","offset":02,"sessionId":"s","kind":"update","payload":{}}`},
		{"offset past 64 bits", `{"type":"record","offset":18446744073709551616,"sessionId":"s","kind":"update","payload":{}}`},
		{"escaped session id", `{"type":"record","offset":2,"sessionId":"s\u0041","kind":"update","payload":{}}`},
		{"space before the payload", `{"type":"record","offset":2,"sessionId":"s","kind":"update","payload": {}}`},
		{"scalar payload", `{"type":"record","offset":2,"sessionId":"s","kind":"update","payload":7}`},
		{"payload not closed", `{"type":"record","offset":2,"sessionId":"s","kind":"update","payload":{"a":"}`},
		{"no closing brace", `{"type":"record","offset":2,"sessionId":"s","kind":"update","payload":{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if r, ok := decodeRecord([]byte(tc.body), nil); ok {
				t.Fatalf("hand-written reader took %s as %#v", tc.body, r)
			}
			got, gerr := Decode([]byte(tc.body))
			want, werr := generalRecord([]byte(tc.body))
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("Decode error %v, general decode error %v", gerr, werr)
			}
			if gerr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode: got %#v, want %#v", got, want)
			}
		})
	}
}

func TestRecordFrameTooLarge(t *testing.T) {
	rec := &Record{Offset: 1, SessionID: "s", Kind: RecordUpdate, Payload: json.RawMessage(`{"a":"` + string(bytes.Repeat([]byte("x"), 100)) + `"}`)}
	buf, err := appendMessageFrame([]byte("kept"), rec, 64)
	if !errcode.Is(err, errcode.HostFrameTooLarge) {
		t.Fatalf("got %v, want %s", err, errcode.HostFrameTooLarge)
	}
	if string(buf) != "kept" {
		t.Fatalf("buffer after a refusal: got %q, want it unchanged", buf)
	}
}

// TestRecordPayloadRunsToTheEnd: the payload is the frame's last member,
// so a member after it (which no version writes) ends up inside the
// payload, which then does not decode: its consumer treats it as a
// malformed record.
func TestRecordPayloadRunsToTheEnd(t *testing.T) {
	body := `{"type":"record","offset":2,"sessionId":"s","kind":"update","payload":{"a":1},"later":{}}`
	r, ok := decodeRecord([]byte(body), nil)
	if !ok || string(r.Payload) != `{"a":1},"later":{}` || json.Valid(r.Payload) {
		t.Fatalf("got %v %#v, want the rest of the body as an invalid payload", ok, r)
	}
}

// TestRecordSessionIDReused: a stream of one session's records reuses the
// previous record's session id, and a record of another session gets its
// own.
func TestRecordSessionIDReused(t *testing.T) {
	var last string
	for _, sid := range []string{"s-1", "s-1", "s-10", "s", "s-1"} {
		body := `{"type":"record","offset":1,"sessionId":"` + sid + `","kind":"update","payload":{}}`
		r, ok := decodeRecord([]byte(body), &last)
		if !ok || r.SessionID != sid || last != sid {
			t.Fatalf("%s: got %v %q (last %q)", sid, ok, r.SessionID, last)
		}
	}
}

// FuzzRecordReader: whatever the hand-written reader takes, the general
// path reads alike when the body is valid JSON, unless the reader's
// payload is not valid JSON (members after the payload, which no version
// writes: its consumer then finds the record malformed).
func FuzzRecordReader(f *testing.F) {
	for _, s := range []string{
		`{"type":"record","offset":7,"sessionId":"s-1","kind":"update","payload":{"a":[1,{"b":"}"}]}}`,
		`{"type":"record","offset":1,"sessionId":"s","kind":"acp_update","payload":{}}`,
		`{"type":"record","offset":1,"sessionId":"s","kind":"exit","payload":{"x":1},"y":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, ok := decodeRecord(body, nil)
		if !ok || !json.Valid(body) || !json.Valid(r.Payload) {
			return
		}
		want, err := generalRecord(body)
		if err != nil {
			t.Fatalf("hand-written reader took %q, the general decode fails: %v", body, err)
		}
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("%q: hand-written %#v, general %#v", body, r, want)
		}
	})
}
