// Package testbin gives tests a tetherd executable: the one `make test`
// built ($TETHERD_BIN), else a single fresh build shared by every test of
// the package. Tests run the real binary as the demo agent and as a daemon.
package testbin

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

var (
	once sync.Once
	bin  string
	dir  string
	err  error
)

// Tetherd returns the path of a tetherd executable, failing tb if it cannot
// be built.
func Tetherd(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		if p := os.Getenv("TETHERD_BIN"); p != "" {
			bin = p
			return
		}
		if dir, err = os.MkdirTemp("", "tetherd-test-bin-"); err != nil {
			return
		}
		bin = filepath.Join(dir, "tetherd")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/tetherd")
		cmd.Dir = Root()
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build ./cmd/tetherd: %v\n%s", berr, out)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Root is the module root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Main is a TestMain body for packages without a leak check: it runs the
// tests, removes a binary Tetherd built and exits with their code.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// MainWaiting is Main for a package whose tests mostly wait on daemons,
// agents and graces rather than compute: unless -test.parallel is given,
// up to n of its parallel tests run at once instead of GOMAXPROCS (2 on
// CI, where this package's wall time is most of CI's).
func MainWaiting(m *testing.M, n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
	Main(m)
}

// Cleanup removes a binary Tetherd built; call it from TestMain after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for a daemon the test starts itself, and starts again on the same
// address after a crash. The port is below the kernel's ephemeral range
// (ip_local_port_range): a port the kernel hands out (":0") may be taken
// by any outgoing connection's local end while the daemon is down, and
// its restart then fails with "address already in use" (seen in CI).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	lo := ephemeralLow()
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(lo-10000))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read, Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	var lo, hi int
	if err != nil {
		return 32768
	}
	if n, _ := fmt.Sscan(string(b), &lo, &hi); n != 2 || lo <= 11000 {
		return 32768
	}
	return lo
}

// LogBuffer collects a child process's output; the child writes while the
// test reads.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
