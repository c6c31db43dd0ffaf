package client

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestReadFrames checks the event-stream parser on the frames tetherd
// writes and on what the format allows besides.
func TestReadFrames(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{"durable event", "id: e:1\nevent: turn.queued\ndata: {\"a\":1}\n\n",
			[]Event{{ID: "e:1", Type: "turn.queued", Data: []byte(`{"a":1}`)}}, nil},
		{"control frame has no id", "event: replay_complete\ndata: {}\n\n",
			[]Event{{Type: "replay_complete", Data: []byte(`{}`)}}, nil},
		{"comments are skipped", ": heartbeat\n\nid: e:2\nevent: x\ndata: 1\n\n",
			[]Event{{ID: "e:2", Type: "x", Data: []byte(`1`)}}, nil},
		{"data lines join with newlines", "event: x\ndata: a\ndata: b\n\n",
			[]Event{{Type: "x", Data: []byte("a\nb")}}, nil},
		{"no space after the colon", "event:x\ndata:1\n\n", []Event{{Type: "x", Data: []byte("1")}}, nil},
		{"a frame cut off is no event", "id: e:1\nevent: x\ndata: 1\n\nid: e:2\nevent: y\n",
			[]Event{{ID: "e:1", Type: "x", Data: []byte("1")}}, io.ErrUnexpectedEOF},
		{"empty stream", "", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Event
			err := readFrames(strings.NewReader(tc.in), func(e Event) error { got = append(got, e); return nil })
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
