package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether/tether/internal/outbox"
)

// BenchmarkAppend measures durable Append throughput with 1 and 16
// concurrent appenders and ~300-byte records (an agent update's size),
// reporting records/s and records per fsync (the group commit's batch).
// Figures: docs/benchmarks.md, "Executor host outbox".
func BenchmarkAppend(b *testing.B) {
	for _, appenders := range []int{1, 16} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			o, err := outbox.Open(b.TempDir(), outbox.Config{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = o.Close() }()
			data := rec(1, 300)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range appenders {
				n := b.N / appenders
				if g < b.N%appenders {
					n++
				}
				wg.Go(func() {
					for range n {
						if _, err := o.Append(context.Background(), data); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			st := o.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(b.N)/float64(st.Syncs), "records/fsync")
		})
	}
}

// BenchmarkFsyncBaseline is the floor Append with one appender sits on:
// appending a 316-byte frame to a file and fsyncing it, on the same disk.
func BenchmarkFsyncBaseline(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	data := rec(1, 300+outbox.FrameHeaderSize)
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(data, int64(i*len(data))); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
