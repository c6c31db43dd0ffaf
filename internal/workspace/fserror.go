package workspace

import "fmt"

// FileErrorKind says why a file request was refused or failed; the ACP
// adapter maps it to a JSON-RPC code, and agents may switch on it (it is
// sent as data.reason).
type FileErrorKind string

// File error kinds. The first group is the agent's mistake (or attack) and
// is answered as invalid params; the second is the daemon's or the file
// system's state and is answered as an internal error.
const (
	FileInvalidPath FileErrorKind = "invalid_path"
	FileOutside     FileErrorKind = "outside_workspace"
	FileNotFound    FileErrorKind = "not_found"
	FileNotRegular  FileErrorKind = "not_regular"
	FileTooLarge    FileErrorKind = "too_large"
	FileHardLinked  FileErrorKind = "hard_linked"

	FileBusy    FileErrorKind = "busy"
	FileTimeout FileErrorKind = "timeout"
	FileIO      FileErrorKind = "io_error"
)

// AgentFault reports whether the kind is the requester's to fix.
func (k FileErrorKind) AgentFault() bool {
	switch k {
	case FileBusy, FileTimeout, FileIO:
		return false
	}
	return true
}

// FileError is a refused or failed file request. Message is written for
// the agent: it says what happened and, where there is one, what to ask
// instead.
type FileError struct {
	Kind    FileErrorKind
	Path    string
	Message string
	// Size and Limit are set for FileTooLarge (bytes).
	Size, Limit int64
	// Err is the underlying cause, if any.
	Err error
}

func (e *FileError) Error() string { return e.Message }

// Unwrap exposes the cause to errors.Is/As.
func (e *FileError) Unwrap() error { return e.Err }

func fileErr(kind FileErrorKind, path string, cause error, format string, args ...any) *FileError {
	return &FileError{Kind: kind, Path: path, Message: fmt.Sprintf(format, args...), Err: cause}
}
