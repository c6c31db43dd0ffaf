package server_test

import (
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if its tests leave a goroutine behind once
// every daemon has stopped (actors, agent watchers, streams, the writer).
func TestMain(m *testing.M) { testbin.RunLeakChecked(m) }
