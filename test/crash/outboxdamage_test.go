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

// damageStream streams chunks 1 to damageChunks, 30 ms apart: the daemon
// is killed early in it, and the host writes the rest into the outbox.
// The turns start one after another, so the first must still be going
// when the last has begun, on a loaded machine too (10 ms apart, the
// first had ended before the kill in CI).
const (
	damageStream = "/stream 200 1 30"
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
	{name: "acked file past the log's end", keep: keepAll, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		// A digit changed: 1xx read as 9xxxx.
		if err := os.WriteFile(filepath.Join(dir, "acked"), []byte("99999\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "acked file past the log's end and a record's length garbled", keep: keepBefore, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		editFile(t, seg, func(b []byte) []byte { le.LittleEndian.PutUint32(b[at.pos:], 0xffffffff); return b })
		if err := os.WriteFile(filepath.Join(dir, "acked"), []byte("99999\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	// A segment file far larger than a segment grows (16 MiB): sparse,
	// its records followed by gigabytes of zeros. The host reads no more
	// of it than a segment holds (the test checks its peak memory), keeps
	// every record and reports the rest. Past 4 GiB the host refused
	// the whole file; below it read it all into memory.
	{name: "an 8 GiB sparse segment", keep: keepAll, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		if err := os.Truncate(seg, 8<<30); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "a 1 GiB sparse segment", keep: keepAll, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
		if err := os.Truncate(seg, 1<<30); err != nil {
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
// session continues. The host's peak memory stays far below the
// oversized segments' sizes.
func TestDamagedOutboxKeepsIntactRecords(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	w := hostedWorld(t)
	w.startHosted()
	r := w.streamUnacked(len(outboxDamages), damageStream, damageChunks, w.kill9)
	host := w.detachedHostPID()
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitFor("the killed host to be gone", func() bool { return !alive(host) })
	for i, tc := range outboxDamages {
		// A chunk record halfway between what the daemon can have and the
		// end of the turn.
		after := r.unacked(i)
		if len(after) < 2 {
			t.Fatalf("%s: the daemon can have committed the whole turn (%d chunks left): nothing to damage", tc.name, len(after))
		}
		r.damaged[i] = after[len(after)/2]
		tc.damage(t, r.outbox(i), r.segment(i), r.damaged[i])
	}
	w.startHosted()
	for i, tc := range outboxDamages {
		w.checkDamagedSession(r.sids[i], tc, r.damaged[i].chunk, r.committed[i])
	}
	// Every outbox was opened by the new host: its peak is what reading
	// them cost.
	if hwm := procStatus(t, w.detachedHostPID(), "VmHWM") << 10; hwm > 200<<20 {
		t.Errorf("host peak memory (VmHWM): got %d MiB, want under 200 MiB: an oversized segment was read into memory", hwm>>20)
	} else {
		t.Logf("host peak memory: %d MiB", hwm>>20)
	}
}

// unackedRun is sessions whose turn streamed into the detached host's
// outboxes while no daemon ran (streamUnacked).
type unackedRun struct {
	w    *world
	sids []string
	// committed is the highest chunk the daemon can have committed, and
	// lastOff the highest offset: what the outbox held as it stopped.
	committed []int
	lastOff   []uint64
	// damaged is the record each session's damage aims at.
	damaged []outboxRecord
}

// streamUnacked runs prompt (chunks 1 to n) in n sessions on the
// detached host, stops the daemon (stop) once each outbox holds the
// first chunks, and waits until the host has written every chunk.
func (w *world) streamUnacked(sessions int, prompt string, n int, stop func()) *unackedRun {
	w.t.Helper()
	r := &unackedRun{w: w, sids: make([]string, sessions), committed: make([]int, sessions), lastOff: make([]uint64, sessions),
		damaged: make([]outboxRecord, sessions)}
	for i := range r.sids {
		r.sids[i], _ = w.createSession("demo")
		w.prompt(r.sids[i], prompt, "turn-1")
	}
	for i := range r.sids {
		w.waitFor("the host to record the first chunks of "+r.sids[i], func() bool { return maxChunk(r.records(i)) >= 3 })
	}
	stop()
	// Nothing the daemon committed goes past what the outboxes hold now.
	for i := range r.sids {
		recs := r.records(i)
		r.committed[i], r.lastOff[i] = maxChunk(recs), recs[len(recs)-1].off
	}
	for i := range r.sids {
		w.waitFor("the host to record every chunk of "+r.sids[i], func() bool { return maxChunk(r.records(i)) == n })
	}
	return r
}

func (r *unackedRun) outbox(i int) string {
	return filepath.Join(r.w.dir, "host", "sessions", r.sids[i])
}

func (r *unackedRun) segment(i int) string {
	return filepath.Join(r.outbox(i), "00000000000000000001.seg")
}

func (r *unackedRun) records(i int) []outboxRecord { return segmentRecords(r.w.t, r.segment(i)) }

// unacked is session i's chunk records past what the daemon can have.
func (r *unackedRun) unacked(i int) []outboxRecord {
	var out []outboxRecord
	for _, rec := range r.records(i) {
		if rec.off > r.lastOff[i] && rec.chunk > 0 {
			out = append(out, rec)
		}
	}
	return out
}

// checkDamagedSession checks the session damaged as tc says; its
// failures name tc. (No subtests: the world's waits fail the test that
// made it.)
func (w *world) checkDamagedSession(sid string, tc outboxDamage, damagedChunk, committed int) {
	w.t.Helper()
	t := namedT{w.t, tc.name}
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
		switch p := f.JSON(w.t); f.Event {
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
		t.Errorf("continue: got %d %v, want 202", code, m)
		return
	}
	if turn := w.waitTurn(sid, "continue-1"); turn["state"] != "completed" {
		t.Errorf("continuation: got %v, want completed", turn)
	}
}

// namedT reports a table case's failures under its name.
type namedT struct {
	*testing.T
	name string
}

func (t namedT) Errorf(format string, args ...any) {
	t.T.Helper()
	t.T.Errorf(t.name+": "+format, args...)
}

// nilIfEmpty is s as a decoded JSON member: absent (nil) when empty.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// liveStream is the turn of TestDamagedOutboxOnARunningHost: records well
// past the 256 KiB of recent records a host keeps in memory, so that the
// first ones the daemon has not committed are read from the file; slow
// enough (6 s) that tetherd is stopped early in it on a loaded machine
// too (in 2 s, CI's stop came too late).
const (
	liveStream = "/stream 3000 30 60"
	liveChunks = 3000
	// hostMemory is what the host reads from memory instead of its
	// outbox's file (internal/outbox, tailBytes), with room to spare.
	hostMemory = 320 << 10
)

// TestDamagedOutboxOnARunningHost damages the outbox of a session under a
// detached host that keeps running while tetherd is stopped: the host
// finds the damage when tetherd attaches again and reads the records it
// has not committed. It delivers every intact record before the damage,
// stops the agent and reports the damage with host_outbox_damaged,
// instead of sending nothing more of the session; the session continues.
func TestDamagedOutboxOnARunningHost(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	damages := []outboxDamage{
		{name: "garbage in the middle", keep: keepBefore, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
			editFile(t, seg, func(b []byte) []byte { copy(b[at.pos+20:], bytes.Repeat([]byte{0xab}, 64)); return b })
		}},
		{name: "segment cut short", keep: keepBefore, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
			if err := os.Truncate(seg, int64(at.pos+10)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "zero-length segment", keep: keepCommitted, reported: true, damage: func(t *testing.T, dir, seg string, at outboxRecord) {
			if err := os.Truncate(seg, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	w := hostedWorld(t)
	w.startHosted()
	r := w.streamUnacked(len(damages), liveStream, liveChunks, w.term)
	for i, tc := range damages {
		// The first record past what the daemon can have: the host
		// reads it from the file, not from memory.
		after := r.unacked(i)
		if len(after) == 0 || len(after)*after[len(after)-1].size < hostMemory {
			t.Fatalf("%s: the daemon can have committed all but the last %d chunks, which the host may read from memory", tc.name, len(after))
		}
		r.damaged[i] = after[0]
		tc.damage(t, r.outbox(i), r.segment(i), r.damaged[i])
	}
	w.startHosted()
	for i, tc := range damages {
		w.checkDamagedSession(r.sids[i], tc, r.damaged[i].chunk, r.committed[i])
	}
}
