package events_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// latencyRate is the steady producer rate of BenchmarkLatency.
const latencyRate = 5000 // events/s

// BenchmarkLatency measures publish→receive latency at a steady 5,000
// events/s spread over 4 sessions, with 1 and 10 subscribers that each
// receive every event. The clock starts when the producer submits the op
// (the moment an agent update reaches the writer) and stops when a
// subscriber takes the event from its hub queue, so it covers group-commit
// wait, the SQLite commit and the fan-out. b.N is the number of events, so
// the run lasts b.N/5000 s: use -benchtime=25000x for 5 s.
func BenchmarkLatency(b *testing.B) {
	for _, subs := range []int{1, 10} {
		b.Run(fmt.Sprintf("subs=%d", subs), func(b *testing.B) { benchLatency(b, subs) })
	}
}

func benchLatency(b *testing.B, subs int) {
	l := openBenchLog(b, ingestSessions)
	per := make([]int, ingestSessions)
	for i := range b.N {
		per[i%ingestSessions]++
	}
	var (
		recv    sync.WaitGroup
		lagged  atomic.Int64
		mu      sync.Mutex
		samples [][]time.Duration
	)
	for range subs {
		for si, sid := range l.sessions {
			sub, err := l.hub.Subscribe(sid)
			if err != nil {
				b.Fatal(err)
			}
			recv.Add(1)
			go func(want int) {
				defer recv.Done()
				defer sub.Close()
				lat := make([]time.Duration, 0, want)
				defer func() {
					mu.Lock()
					samples = append(samples, lat)
					mu.Unlock()
				}()
				for len(lat) < want {
					select {
					case <-sub.Ready():
						// Read the clock first: the decode is the client's cost.
						now := time.Now().UnixNano()
						for _, b := range sub.Take(nil) {
							for _, e := range b {
								if t, ok := sentAt(e.Payload); ok {
									lat = append(lat, time.Duration(now-t))
								}
							}
						}
					case <-sub.Done():
						lagged.Add(1)
						return
					}
				}
			}(per[si])
		}
	}

	b.ResetTimer()
	// One pacing goroutine: event i is due at start + i/rate. It submits
	// whatever is due, then sleeps until the next one; Submit never blocks.
	interval := time.Second / latencyRate
	start := time.Now()
	wd := newWindow(1 << 16) // a steady rate needs no back-pressure
	for i := range b.N {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		si := i % ingestSessions
		wd.submit(l.w, chunkOp(l, l.sessions[si], promptID(si), time.Now().UnixNano()))
	}
	if err := wd.drain(); err != nil {
		b.Fatal(err)
	}
	recv.Wait()
	b.StopTimer()

	all := mergeSorted(samples)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(all, 1)), "max-ms")
	b.ReportMetric(float64(lagged.Load()), "lagged")
}
