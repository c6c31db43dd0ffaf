package connlimit

// Bounds of the default connection cap.
const (
	// minReserve and maxReserve bound the descriptors kept back from
	// connections: the database and its WAL, agents' pipes, log files,
	// listeners, and the refusals in flight (maxRefusing).
	minReserve = 64
	maxReserve = 4096
	// ceiling bounds the default however high the file limit: past it,
	// memory (a goroutine and buffers per connection) runs out first.
	ceiling = 16384
	// unknownDefault is the cap when the file limit cannot be read.
	unknownDefault = 1024
)

// DefaultMax is the connection cap derived from the process's open-file
// limit (RLIMIT_NOFILE; Go raises the soft limit to the hard one at start):
// three quarters of it, keeping a quarter (at least 64, at most 4096) for
// everything else, and at most 16384.
func DefaultMax() int { return maxFor(fileLimit()) }

func maxFor(limit uint64) int {
	if limit == 0 {
		return unknownDefault
	}
	if limit > 1<<32 {
		limit = 1 << 32 // RLIM_INFINITY and friends
	}
	reserve := min(max(limit/4, minReserve), maxReserve)
	if limit <= reserve {
		return 1
	}
	return int(min(limit-reserve, ceiling))
}
