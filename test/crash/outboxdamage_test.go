package crash_test

import (
	"bytes"
	le "encoding/binary"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A damaged outbox (issue 28): the detached host's outbox of a session
// whose records the daemon never acknowledged is damaged on disk while
// both are down. The next host delivers every intact record before the
// damage, moves the rest aside, reports the agent lost with the stable
// code host_outbox_damaged, and the session goes on.

// damageStream streams chunks 1 to damageChunks, 10 ms apart: the daemon
// is killed early in it, and the host writes the rest into the outbox.
const (
	damageStream = "/stream 200 1 10"
	damageChunks = 200
)

// outboxRecord is one frame of an outbox segment, as this test reads the
// file itself (the format internal/outbox/doc.go describes: a 16-byte
// header, then frames of length, checksum, offset and data).
type outboxRecord struct {
	off       uint64
	pos, size int
	// chunk is the "chunk N" the record carries, 0 if none.
	chunk int
}

var chunkRE = regexp.MustCompile(`"chunk (\d+)\\n"`)

// segmentRecords reads the frames of a segment file, stopping at the end
// or at the first frame that does not fit; none while there is no file.
func segmentRecords(t *testing.T, path string) []outboxRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []outboxRecord
	for p := 16; p+16 <= len(b); {
		n := int(le.LittleEndian.Uint32(b[p:]))
		if p+16+n > len(b) {
			break
		}
		r := outboxRecord{off: le.LittleEndian.Uint64(b[p+8:]), pos: p, size: 16 + n}
		if m := chunkRE.FindSubmatch(b[p+16 : p+16+n]); m != nil {
			r.chunk, _ = strconv.Atoi(string(m[1]))
		}
		out = append(out, r)
		p += 16 + n
	}
	return out
}

// maxChunk is the highest chunk among records.
func maxChunk(recs []outboxRecord) int {
	c := 0
	for _, r := range recs {
		c = max(c, r.chunk)
	}
	return c
}

// chunks is the text of chunks 1 to n.
func chunks(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "chunk %d\n", i)
	}
	return b.String()
}

// What a damaged session's transcript keeps of its turn.
const (
	keepBefore    = iota // every chunk before the damaged record
	keepCommitted        // what the daemon had committed (the whole segment went)
	keepAll              // every chunk: no record was lost
)

// outboxDamage is one way the test damages a session's outbox.
type outboxDamage struct {
	name string
	// damage harms the outbox in dir, whose segment is seg; at is a
	// record past every one the daemon can have committed.
	damage func(t *testing.T, dir, seg string, at outboxRecord)
	keep   int
	// reported: the damage is reported with host_outbox_damaged (a torn
	// tail is what any crash leaves: nothing to report).
	reported bool
}

func editFile(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

var outboxDamages = []outboxDamage{
	{name: "garbage in the middle", keep: keepBefore, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func(b []byte) []byte { copy(b[at.pos+20:], bytes.Repeat([]byte{0xab}, 64)); return b })
	}},
	{name: "a record's length garbled", keep: keepBefore, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func(b []byte) []byte { le.LittleEndian.PutUint32(b[at.pos:], 0xfffff000); return b })
	}},
	{name: "zero-length segment", keep: keepCommitted, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func([]byte) []byte { return nil })
	}},
	{name: "bad segment header", keep: keepCommitted, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func(b []byte) []byte { copy(b, "JUNK"); return b })
	}},
	{name: "truncated segment header", keep: keepCommitted, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func(b []byte) []byte { return b[:9] })
	}},
	{name: "unreadable segment", keep: keepCommitted, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		// A directory in its place: unreadable even for root.
		if err := os.Remove(seg); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(seg, 0o700); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "garbled acked file", keep: keepAll, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		if err := os.WriteFile(filepath.Join(dir, "acked"), []byte("12\x00garbage\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "empty acked file", keep: keepAll, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		if err := os.WriteFile(filepath.Join(dir, "acked"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	// Controls, which the host took in its stride before: a missing acked
	// file (everything is sent again, the daemon keeps each record once)
	// and a torn tail.
	{name: "missing acked file", keep: keepAll, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		if err := os.Remove(filepath.Join(dir, "acked")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}},
	{name: "torn tail", keep: keepAll, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func(b []byte) []byte { return append(b, 40, 0, 0, 0, 1, 2, 3) })
	}},
}

// TestDamagedOutboxKeepsIntactRecords runs a streaming turn in one
// detached session per kind of damage, kills tetherd early in the turns
// (the records that follow stay unacknowledged on the host), lets the
// host write every chunk, kills the host, damages each session's outbox
// in its own way and starts tetherd again. Each session's transcript then
// holds every chunk of the intact records before the damage, each once;
// the damage is reported with host_outbox_damaged on the interrupted
// turn, its turn.interrupted event and the executor's status; the
// damaged files are kept in the host's quarantine directory; and the
// session continues.
func TestDamagedOutboxKeepsIntactRecords(t *testing.T) {
	w := hostedWorld(t)
	w.startHosted()
	sids := make([]string, len(outboxDamages))
	for i := range outboxDamages {
		sids[i], _ = w.createSession("demo")
		w.prompt(sids[i], damageStream, "turn-1")
	}
	outboxOf := func(sid string) string { return filepath.Join(w.dir, "host", "sessions", sid) }
	segOf := func(sid string) string { return filepath.Join(outboxOf(sid), "00000000000000000001.seg") }
	for _, sid := range sids {
		w.waitFor("the host to record the first chunks of "+sid, func() bool { return maxChunk(segmentRecords(t, segOf(sid))) >= 3 })
	}
	w.kill9()
	// Nothing the daemon committed goes past what the outboxes hold now.
	committed := make([]int, len(sids))
	lastOff := make([]uint64, len(sids))
	for i, sid := range sids {
		recs := segmentRecords(t, segOf(sid))
		committed[i], lastOff[i] = maxChunk(recs), recs[len(recs)-1].off
	}
	for _, sid := range sids {
		w.waitFor("the host to record every chunk of "+sid, func() bool { return maxChunk(segmentRecords(t, segOf(sid))) == damageChunks })
	}
	host := w.detachedHostPID()
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitFor("the killed host to be gone", func() bool { return !alive(host) })

	damagedAt := make([]outboxRecord, len(sids))
	for i, sid := range sids {
		// A chunk record halfway between what the daemon can have and the
		// end of the turn.
		var after []outboxRecord
		for _, r := range segmentRecords(t, segOf(sid)) {
			if r.off > lastOff[i] && r.chunk > 0 {
				after = append(after, r)
			}
		}
		damagedAt[i] = after[len(after)/2]
		outboxDamages[i].damage(t, outboxOf(sid), segOf(sid), damagedAt[i])
	}

	w.startHosted()
	for i, tc := range outboxDamages {
		t.Run(tc.name, func(t *testing.T) {
			w.checkDamagedSession(t, sids[i], tc, damagedAt[i].chunk, committed[i])
		})
	}
}

// checkDamagedSession checks one session of TestDamagedOutboxKeepsIntactRecords.
func (w *world) checkDamagedSession(t *testing.T, sid string, tc outboxDamage, damagedChunk, committed int) {
	t.Helper()
	turn := w.waitTurn(sid, "turn-1")
	if turn["state"] != "interrupted" || turn["interruptReason"] != "executor_lost" {
		t.Errorf("turn: got state %v, reason %v; want interrupted, executor_lost", turn["state"], turn["interruptReason"])
	}
	wantCode := ""
	if tc.reported {
		wantCode = "host_outbox_damaged"
	}
	gotCode := ""
	if e, ok := turn["error"].(map[string]any); ok {
		gotCode, _ = e["code"].(string)
	}
	if gotCode != wantCode {
		t.Errorf("turn error: got %v, want code %q", turn["error"], wantCode)
	}

	got := w.agentText(sid)["turn-1"]
	switch tc.keep {
	case keepBefore:
		if want := chunks(damagedChunk - 1); got != want {
			t.Errorf("transcript: got %d bytes of the turn's text, want chunks 1 to %d, each once (%d bytes): every intact record before the damaged one", len(got), damagedChunk-1, len(want))
		}
	case keepAll:
		if want := chunks(damageChunks); got != want {
			t.Errorf("transcript: got %d bytes of the turn's text, want all %d chunks, each once (%d bytes)", len(got), damageChunks, len(want))
		}
	case keepCommitted:
		n := strings.Count(got, "\n")
		if got != chunks(n) || n > committed {
			t.Errorf("transcript: got %d lines of the turn's text, want chunks 1 to n for an n up to %d (what the daemon can have committed)", n, committed)
		}
	}

	var interrupted, executor []map[string]any
	for _, f := range w.replay(sid) {
		switch p := f.JSON(t); f.Event {
		case "turn.interrupted":
			interrupted = append(interrupted, p)
		case "session.executor_status":
			if p["errorCode"] == "host_outbox_damaged" {
				executor = append(executor, p)
			}
		}
	}
	if len(interrupted) != 1 || interrupted[0]["code"] != nilIfEmpty(wantCode) {
		t.Errorf("turn.interrupted events: got %v, want one with code %q", interrupted, wantCode)
	}
	if tc.reported && (len(executor) == 0 || executor[0]["status"] != "error" || !strings.Contains(fmt.Sprint(executor[0]["error"]), "damaged")) {
		t.Errorf("session.executor_status: got %v, want one with status error, errorCode host_outbox_damaged and the damage in its error", executor)
	}
	if !tc.reported && len(executor) > 0 {
		t.Errorf("session.executor_status: got %v, want none with host_outbox_damaged", executor)
	}
	if st := w.status(sid); tc.reported && (st["executorStatus"] != "error" || st["errorCode"] != "host_outbox_damaged") {
		t.Errorf("status: got executor %v, errorCode %v; want error, host_outbox_damaged", st["executorStatus"], st["errorCode"])
	}
	// The damaged files are kept for a person to look at.
	kept, _ := os.ReadDir(filepath.Join(w.dir, "host", "quarantine", sid))
	if tc.reported && len(kept) == 0 {
		t.Errorf("quarantine: nothing in %s, want the damaged files", filepath.Join(w.dir, "host", "quarantine", sid))
	}

	// The session goes on.
	code, m := w.do("POST", "/session/"+sid+"/continue", map[string]any{"promptId": "continue-1"})
	if code != http.StatusAccepted {
		t.Fatalf("continue: got %d %v, want 202", code, m)
	}
	if turn := w.waitTurn(sid, "continue-1"); turn["state"] != "completed" {
		t.Errorf("continuation: got %v, want completed", turn)
	}
}

// nilIfEmpty is s as a decoded JSON member: absent (nil) when empty.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
