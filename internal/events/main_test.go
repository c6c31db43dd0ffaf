package events_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if a test leaves a goroutine behind (a writer
// not closed, a retention loop not joined); only what testbin.LongLived
// names, with its reason, is ignored.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testbin.LongLived()...) }
