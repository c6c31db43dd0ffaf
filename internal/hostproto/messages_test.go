package hostproto

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

// everyMessage holds one filled-in value of every message type.
func everyMessage() []Message {
	return []Message{
		&Hello{MinVersion: 1, MaxVersion: 2, Token: "s3cret", DaemonID: "d-1", DaemonVersion: "v0.9.0"},
		&Welcome{Version: 1, HostID: "h-1", HostVersion: "v0.9.0", Sessions: []string{"s-1", "s-2"}},
		&Refused{Code: errcode.HostUnauthorized, Message: "wrong token"},
		&Command{ID: "c-1", Kind: CommandPrompt, SessionID: "s-1", Payload: json.RawMessage(`{"text":"hi"}`)},
		&CommandResult{ID: "c-1", Result: json.RawMessage(`{"stopReason":"end_turn"}`)},
		&CommandResult{ID: "c-2", Error: &ErrorBody{Code: errcode.SessionNotFound, Message: "no session s-9"}},
		&Record{Offset: 7, SessionID: "s-1", Kind: RecordUpdate, Payload: json.RawMessage(`{"chunk":"x"}`)},
		&Ack{Offset: 7},
		&Ping{Nonce: 3},
		&Pong{Nonce: 3},
	}
}

func TestRoundTripEveryMessage(t *testing.T) {
	seen := map[Type]bool{}
	for _, m := range everyMessage() {
		t.Run(string(m.Type()), func(t *testing.T) {
			body, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if want := `{"type":"` + string(m.Type()) + `"`; !strings.HasPrefix(string(body), want) {
				t.Fatalf("body %s: want it to start with %s", body, want)
			}
			got, err := Decode(body)
			if err != nil {
				t.Fatalf("Decode(%s): %v", body, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip: got %#v, want %#v", got, m)
			}
		})
		seen[m.Type()] = true
	}
	for _, typ := range []Type{TypeHello, TypeWelcome, TypeRefused, TypeCommand, TypeCommandResult, TypeRecord, TypeAck, TypePing, TypePong} {
		if !seen[typ] {
			t.Errorf("no round trip of %s", typ)
		}
		if m := newMessage(typ); m == nil || m.Type() != typ {
			t.Errorf("newMessage(%s): got %v", typ, m)
		}
	}
}

// emptyMessage has no fields, as a future message might.
type emptyMessage struct{}

func (*emptyMessage) Type() Type { return "empty" }

func TestEncodeFieldless(t *testing.T) {
	cases := []struct {
		name string
		m    Message
		want string
	}{
		{"no fields", &emptyMessage{}, `{"type":"empty"}`},
		{"zero fields", &Ping{}, `{"type":"ping","nonce":0}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := Encode(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(body); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEncodeNilMessage(t *testing.T) {
	if body, err := Encode((*Ack)(nil)); err == nil {
		t.Fatalf("Encode(nil *Ack): got %s, want an error", body)
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"not json", `{"type":`, "not a JSON object"},
		{"array", `[1,2]`, "not a JSON object"},
		{"null", `null`, "no type"},
		{"no type", `{"offset":3}`, "no type"},
		{"unknown type", `{"type":"teleport"}`, `unknown message type "teleport"`},
		{"type not a string", `{"type":3}`, "not a JSON object"},
		{"field of the wrong type", `{"type":"ack","offset":"seven"}`, "malformed ack"},
		{"record field of the wrong type", `{"type":"record","offset":"seven","sessionId":"s"}`, "malformed record"},
		{"record payload not json", `{"type":"record","offset":1,"payload":{"a":}`, "not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode([]byte(tc.body))
			if !errcode.Is(err, errcode.HostProtocolError) {
				t.Fatalf("Decode(%s): got %v, %v; want %s", tc.body, m, err, errcode.HostProtocolError)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestDecodeIgnoresUnknownFields(t *testing.T) {
	// A newer peer may add optional fields; an older one reads past them.
	m, err := Decode([]byte(`{"type":"ack","offset":9,"batch":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m, Message(&Ack{Offset: 9}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

// TestDecodeRecordPath: frames are records by their type alone, the last
// one given winning as in the general path, and other messages that carry
// a record's fields stay what their type says.
func TestDecodeRecordPath(t *testing.T) {
	cases := []struct {
		name, body string
		want       Message
	}{
		{"record", `{"type":"record","offset":4,"sessionId":"s","kind":"update","payload":{"a":[1,{"b":null}]}}`,
			&Record{Offset: 4, SessionID: "s", Kind: RecordUpdate, Payload: json.RawMessage(`{"a":[1,{"b":null}]}`)}},
		{"record without payload", `{"type":"record","offset":5,"sessionId":"s","kind":"exit"}`, &Record{Offset: 5, SessionID: "s", Kind: RecordExit}},
		{"ack with a record's fields", `{"type":"ack","sessionId":"s","offset":3,"kind":"update"}`, &Ack{SessionID: "s", Offset: 3}},
		{"record type given last", `{"type":"ack","offset":2,"type":"record"}`, &Record{Offset: 2}},
		{"ack type given last", `{"type":"record","offset":2,"type":"ack"}`, &Ack{Offset: 2}},
		{"ping whose nonce is not a record field", `{"type":"ping","nonce":8,"offset":"x"}`, &Ping{Nonce: 8}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.body))
			if err != nil {
				t.Fatalf("Decode(%s): %v", tc.body, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestKindsKnown(t *testing.T) {
	for _, k := range []CommandKind{CommandNew, CommandLoad, CommandResume, CommandFork, CommandPrompt, CommandCancel, CommandPermissionAnswer, CommandStop, CommandSetMode, CommandSetConfigOption} {
		if !k.Known() {
			t.Errorf("CommandKind %q: got unknown, want known", k)
		}
	}
	if CommandKind("reboot").Known() {
		t.Error(`CommandKind "reboot": got known, want unknown`)
	}
	for _, k := range []RecordKind{RecordUpdate, RecordRequest, RecordExit} {
		if !k.Known() {
			t.Errorf("RecordKind %q: got unknown, want known", k)
		}
	}
	if RecordKind("gossip").Known() {
		t.Error(`RecordKind "gossip": got known, want unknown`)
	}
}

func TestCommandResultErr(t *testing.T) {
	if err := (CommandResult{ID: "a"}).Err(); err != nil {
		t.Fatalf("success: got %v, want nil", err)
	}
	err := (CommandResult{ID: "a", Error: &ErrorBody{Code: errcode.TurnActive, Message: "busy"}}).Err()
	if !errcode.Is(err, errcode.TurnActive) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("failure: got %v, want %s: busy", err, errcode.TurnActive)
	}
}

func TestHelloLogValueHidesToken(t *testing.T) {
	v := Hello{MinVersion: 1, MaxVersion: 1, Token: "s3cret", DaemonID: "d"}.LogValue()
	if s := v.String(); strings.Contains(s, "s3cret") {
		t.Fatalf("log value %s shows the token", s)
	}
}
