//go:build !unix

package connlimit

// fileLimit is unknown off Unix.
func fileLimit() uint64 { return 0 }
