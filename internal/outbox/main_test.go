package outbox_test

import (
	"os"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// TestMain runs the crash test's child when asked to (see crash_test.go),
// else the tests, failing the package if one leaves a goroutine behind (an
// outbox not closed).
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(runCrashChild(dir))
	}
	testbin.RunLeakChecked(m)
}
