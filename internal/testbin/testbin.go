// Package testbin gives tests a tetherd executable: the one `make test`
// built ($TETHERD_BIN), else a single fresh build shared by every test of
// the package. Tests run the real binary as the demo agent and as a daemon.
package testbin

import (
	"fmt"
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

// Cleanup removes a binary Tetherd built; call it from TestMain after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
