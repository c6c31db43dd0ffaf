package testbin

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// RunLeakChecked is a TestMain body: it runs the package's tests, then
// fails the package if any goroutine outlives them (every goroutine needs
// an owner that stops it), removes a binary Tetherd built and exits.
func RunLeakChecked(m *testing.M) {
	goleak.VerifyTestMain(m, append(LongLived(), goleak.Cleanup(func(code int) {
		Cleanup()
		os.Exit(code)
	}))...)
}

// LongLived lists the goroutines a leak check ignores, each for a reason
// outside this project's control; everything else a test leaves running
// is a goroutine without an owner.
func LongLived() []goleak.Option {
	return []goleak.Option{
		// gorm's prepared-statement cache starts an expiry goroutine per
		// database that it never stops (gorm v1: "done channel is never
		// closed", see internal/lru); closing the store cannot end it.
		goleak.IgnoreAnyFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"),
	}
}
