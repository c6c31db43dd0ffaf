package outbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/outbox"
)

// crashChildEnv, set to a directory, makes the test binary the crash
// test's child: it appends to the outbox there until it is killed.
const crashChildEnv = "OUTBOX_CRASH_CHILD_DIR"

// crashSyncDelayEnv, if set, is the child's Config.SyncDelay: its
// Appends then return before their fsync, and a kill of the process (not
// of the machine) must lose none of them either.
const crashSyncDelayEnv = "OUTBOX_CRASH_CHILD_SYNC_DELAY"

// crashSegment is small so that the child rolls and deletes segments
// often, and a kill lands in those steps too.
const crashSegment = 16 << 10

// childRecord is the content the child appends for label: long enough to
// make segments roll, and checkable from the label alone.
func childRecord(label string) []byte {
	return []byte(label + "|" + strings.Repeat(label, 8))
}

// runCrashChild appends from 4 goroutines forever, printing "OK <offset>
// <label>" once an Append has returned, and every 100 records of the first
// goroutine acks what lies 50 records behind, printing "ACK <offset>" once
// the Ack has returned. Each line is one write, so a kill leaves at most
// one partial line, the last.
func runCrashChild(dir string) int {
	delay, _ := time.ParseDuration(os.Getenv(crashSyncDelayEnv))
	o, err := outbox.Open(dir, outbox.Config{SegmentBytes: crashSegment, SyncDelay: delay, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	failed := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				label := fmt.Sprintf("p%d-g%d-i%d", os.Getpid(), g, i)
				off, err := o.Append(context.Background(), childRecord(label))
				if err != nil {
					failed <- err
					return
				}
				say("OK %d %s", off, label)
				if g == 0 && i%100 == 99 && off > 50 {
					if err := o.Ack(off - 50); err != nil {
						failed <- err
						return
					}
					say("ACK %d", off-50)
				}
			}
		}()
	}
	fmt.Fprintln(os.Stderr, "child:", <-failed)
	return 3
}

func TestCrashKeepsEveryReturnedAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []struct {
		name      string
		syncDelay string
	}{
		{"fsync before each append returns", ""},
		{"fsync within 5ms", "5ms"},
	} {
		t.Run(tc.name, func(t *testing.T) { crashCycles(t, tc.syncDelay) })
	}
}

func crashCycles(t *testing.T, syncDelay string) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	reported := map[uint64]string{} // offset → label, over every cycle
	var acked uint64
	for cycle := range 6 {
		killAfter := 1 + rng.IntN(2000)
		lines := runChildUntilKilled(t, dir, killAfter, syncDelay)
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) == 3 && f[0] == "OK":
				off, _ := strconv.ParseUint(f[1], 10, 64)
				if prev, ok := reported[off]; ok {
					t.Fatalf("cycle %d: offset %d returned for %s, and before for %s", cycle, off, f[2], prev)
				}
				reported[off] = f[2]
			case len(f) == 2 && f[0] == "ACK":
				n, _ := strconv.ParseUint(f[1], 10, 64)
				acked = max(acked, n)
			default:
				t.Fatalf("cycle %d: child printed %q", cycle, l)
			}
		}
		checkAfterCrash(t, dir, reported, acked)
		t.Logf("cycle %d: killed after %d lines; %d offsets reported, acked ≥ %d", cycle, killAfter, len(reported), acked)
	}
}

// runChildUntilKilled starts the child on dir, kills it with SIGKILL once
// it has printed n lines, and returns its complete lines (those printed
// before the kill took effect included).
func runChildUntilKilled(t *testing.T, dir string, n int, syncDelay string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashSyncDelayEnv+"="+syncDelay)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	var lines []string
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break // a partial last line is dropped: its Append did return, but the test cannot know for what
		}
		lines = append(lines, strings.TrimSuffix(l, "\n"))
		if len(lines) == n {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: got %v after %d lines, want it killed after %d; stderr:\n%s", err, len(lines), n, stderr.String())
	}
	return lines
}

// checkAfterCrash reopens dir and checks it: acked at least as far as an
// Ack returned, the records after it gapless, each one something the child
// appended (once), and every reported offset above acked holding its label.
func checkAfterCrash(t *testing.T, dir string, reported map[uint64]string, acked uint64) {
	t.Helper()
	o := open(t, dir, outbox.Config{SegmentBytes: crashSegment})
	defer func() { _ = o.Close() }()
	st := o.Stats()
	if st.Acked < acked {
		t.Fatalf("acked %d after reopen, but an Ack of %d returned", st.Acked, acked)
	}
	recs := readAll(t, o, 0)
	if uint64(len(recs)) != st.Next-st.FirstUnacked {
		t.Fatalf("read %d records, but Stats says %d to %d", len(recs), st.FirstUnacked, st.Next-1)
	}
	seen := map[string]bool{}
	for k, r := range recs {
		if r.Offset != st.FirstUnacked+uint64(k) {
			t.Fatalf("record %d has offset %d, want %d (a gap)", k, r.Offset, st.FirstUnacked+uint64(k))
		}
		label, _, _ := strings.Cut(string(r.Data), "|")
		if !bytes.Equal(r.Data, childRecord(label)) || seen[label] {
			t.Fatalf("record %d is %.40q: not a child's record, or a second copy", r.Offset, r.Data)
		}
		seen[label] = true
		if want, ok := reported[r.Offset]; ok && want != label {
			t.Fatalf("record %d holds %s, but its Append returned for %s", r.Offset, label, want)
		}
	}
	for off, label := range reported {
		if off > st.Acked && off >= st.Next {
			t.Fatalf("record %d (%s): its Append returned, but the log ends at %d", off, label, st.Next-1)
		}
	}
}
