//go:build !linux

package nodump

// Err is nil: PR_SET_DUMPABLE is Linux's, and other systems have no call
// of the kind (there, a process of the same user may read tetherd's
// environment).
var Err error
