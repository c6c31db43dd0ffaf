package outbox

import "os"

// SetSync replaces the fsync the writer calls, so tests can make the disk
// fail. Call it before the Append it should affect: the channel hand-off
// to the writer orders the two.
func SetSync(o *Outbox, fn func(*os.File) error) { o.sync = fn }

// SegName is segName, for tests that damage a given segment file.
var SegName = segName

// Header sizes, for tests that compute frame positions.
const (
	SegHeaderSize   = segHeaderSize
	FrameHeaderSize = frameHeaderSize
)
