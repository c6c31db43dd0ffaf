package hostproto

import (
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// TestMain fails the package if a test leaves a goroutine behind (a
// handshake or a reader nobody stopped).
func TestMain(m *testing.M) {
	testbin.RunLeakChecked(m)
}
