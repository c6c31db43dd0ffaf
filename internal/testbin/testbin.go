// Package testbin gives tests a tetherd executable: the one `make test`
// built ($TETHERD_BIN), else a single fresh build shared by every test of
// the package. Tests run the real binary as the demo agent and as a daemon.
package testbin

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// Cleanup removes a binary Tetherd built; call it from TestMain after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for a daemon the test starts itself.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
