package testbin

import "go.uber.org/goleak"

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
