package testbin

import (
	"syscall"
	"testing"
	"time"
)

// CPUMeter reports a benchmark's CPU time per op (user and system, every
// thread of the process) as the metric cpu-ns/op. On a machine shared
// with other work the wall time per op moves with their load; the CPU the
// process itself spent moves far less.
type CPUMeter struct {
	start time.Duration
}

// StartCPU begins measuring; call it beside b.ResetTimer.
func StartCPU() CPUMeter { return CPUMeter{start: processCPU()} }

// Report adds the CPU spent since StartCPU, per op, to b's results; call
// it where the measured work ends.
func (m CPUMeter) Report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-m.start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
