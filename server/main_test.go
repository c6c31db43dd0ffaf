package server_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if its tests leave a goroutine behind once
// every daemon has stopped (actors, agent watchers, streams, the writer);
// only what testbin.LongLived names, with its reason, is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(testbin.LongLived(), goleak.Cleanup(func(code int) {
		testbin.Cleanup()
		os.Exit(code)
	}))...)
}
