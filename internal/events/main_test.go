package events_test

import (
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if a test leaves a goroutine behind (a writer
// not closed, a retention loop not joined).
func TestMain(m *testing.M) { testbin.RunLeakChecked(m) }
