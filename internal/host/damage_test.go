package host_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// flipRecord changes a byte of the data of record off in the outbox
// segment at path (the format of internal/outbox/doc.go).
func flipRecord(t *testing.T, path string, off uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for p := 16; p+16 <= len(b); p += 16 + int(binary.LittleEndian.Uint32(b[p:])) {
		if binary.LittleEndian.Uint64(b[p+8:]) == off {
			b[p+16+2] ^= 0x5a
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no record %d in %s", off, path)
}

// TestDamagedOutboxTakenUp: a host killed under its agent finds the
// session's outbox damaged on restart. It takes the session up anyway:
// an attach from before the damage gets every intact record, then a lost
// exit that says host_outbox_damaged; an attach from past the damage
// (the daemon committed records the damage took, and the exit took one
// of their offsets) fails with host_outbox_damaged. The damaged bytes
// are kept in the host's quarantine directory.
func TestDamagedOutboxTakenUp(t *testing.T) {
	cases := []struct {
		name string
		// from is the attach's From, relative to the damaged record.
		from int
	}{
		{name: "attach from before the damage", from: -4},
		{name: "attach from just before the damage", from: -1},
		{name: "attach from the damaged record", from: 0},
		{name: "attach from past the damage", from: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, sock, recs, _ := killedHost(t, "/stream 12", nil)
			damaged := recs[len(recs)-5].Offset
			flipRecord(t, filepath.Join(dir, "sessions", "s1", "00000000000000000001.seg"), damaged)

			hostProcess(t, dir, sock)
			b, err := dialSocket(t, sock, testToken)
			if err != nil {
				t.Fatal(err)
			}
			b.autoAck = false
			from := uint64(int(damaged) + tc.from)
			r := b.do(hostproto.CommandAttach, "s1", hostproto.AttachPayload{From: from})
			if from >= damaged {
				if r.Error == nil || r.Error.Code != errcode.HostOutboxDamaged {
					t.Fatalf("attach from %d, the damage at %d: got %+v, want %s", from, damaged, r.Error, errcode.HostOutboxDamaged)
				}
			} else {
				decode[hostproto.AttachResult](t, r)
				after := readToExit(b, "s1")
				checkGapless(t, after, from+1)
				if len(after) != int(damaged-from) {
					t.Fatalf("attach from %d: got records %s, want the intact ones up to %d, then the exit", from, offsets(after), damaged-1)
				}
				for i, got := range after[:len(after)-1] {
					if want := recs[from+uint64(i)]; got.Kind != want.Kind || string(got.Payload) != string(want.Payload) {
						t.Fatalf("record %d: got %s %s, want %s %s", got.Offset, got.Kind, got.Payload, want.Kind, want.Payload)
					}
				}
				e := exitOf(t, after[len(after)-1])
				if !e.Lost || e.ErrorCode != errcode.HostOutboxDamaged || !strings.Contains(e.Error, "record") {
					t.Fatalf("exit: got %+v, want lost, with %s and what was lost", e, errcode.HostOutboxDamaged)
				}
			}
			kept, err := os.ReadDir(filepath.Join(dir, "quarantine", "s1"))
			if err != nil || len(kept) == 0 {
				t.Fatalf("quarantine: got %v, %v; want the damaged bytes kept", kept, err)
			}
		})
	}
}
