package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// openFlags are added to every open: O_NONBLOCK so that a FIFO (or a
// device waiting for a peer) never blocks the open itself, which would pin
// an OS thread until somebody opens the other end; O_NOCTTY so that a
// terminal can never become the daemon's controlling terminal. Neither
// changes how a regular file is read or written.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// ctxCheckEvery is how many buffered chunks a read goes through between
// looks at its context, so a timed-out read stops without paying for a
// check per line.
const ctxCheckEvery = 256

// ReadText serves fs/read_text_file: the file's text from line (1-based;
// nil or < 1 is the start) for limit lines (nil or negative is to the end).
// It streams through the descriptor and never holds more than ReadLimit
// bytes; a whole-file read of a larger file is refused with its size.
func (r *Root) ReadText(ctx context.Context, path string, line, limit *int) (string, error) {
	return r.do(ctx, path, func(ctx context.Context) (string, error) {
		f, fi, err := r.open(path, os.O_RDONLY, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		from, count := 1, -1
		if line != nil && *line > 1 {
			from = *line
		}
		if limit != nil && *limit >= 0 {
			count = *limit
		}
		if line == nil && limit == nil && fi.Size() > r.lim.ReadLimit {
			return "", &FileError{Kind: FileTooLarge, Path: path, Size: fi.Size(), Limit: r.lim.ReadLimit,
				Message: tooLargeMessage(path, fi.Size(), r.lim.ReadLimit)}
		}
		text, over, err := readLines(ctx, f, from, count, r.lim.ReadLimit)
		switch {
		case err != nil && ctx.Err() != nil:
			return "", r.ended(ctx, path)
		case err != nil:
			return "", fileErr(FileIO, path, err, "reading %s: %v", path, err)
		case over:
			return "", &FileError{Kind: FileTooLarge, Path: path, Size: fi.Size(), Limit: r.lim.ReadLimit,
				Message: tooLargeMessage(path, fi.Size(), r.lim.ReadLimit)}
		}
		return text, nil
	})
}

func tooLargeMessage(path string, size, limit int64) string {
	return fmt.Sprintf("%s is %d bytes; one read returns at most %d bytes: read a range with line and limit (for example line 1, limit 1000) and ask for fewer lines if a range is still too large",
		path, size, limit)
}

// readLines skips to line from and returns up to count lines (count < 0:
// all), reporting over when they come to more than max bytes. Memory stays
// within max plus one buffer however long the file or its lines are.
func readLines(ctx context.Context, f *os.File, from, count int, max int64) (text string, over bool, err error) {
	br := bufio.NewReaderSize(f, 64<<10)
	chunks := 0
	check := func() error {
		if chunks++; chunks%ctxCheckEvery == 0 {
			return ctx.Err()
		}
		return nil
	}
	for n := 1; n < from; {
		_, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			n++
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return "", false, nil
		default:
			return "", false, err
		}
		if err := check(); err != nil {
			return "", false, err
		}
	}
	var b strings.Builder
	for got := 0; count < 0 || got < count; {
		chunk, err := br.ReadSlice('\n')
		if int64(b.Len()+len(chunk)) > max {
			return "", true, nil
		}
		b.Write(chunk)
		switch {
		case err == nil:
			got++
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return b.String(), false, nil
		default:
			return "", false, err
		}
		if err := check(); err != nil {
			return "", false, err
		}
	}
	return b.String(), false, nil
}

// WriteText serves fs/write_text_file: it creates or replaces the file's
// content. It refuses anything but a regular file, and a file with more
// than one hard link, since another name of it may be outside the
// workspace (and in a shared store such as pnpm's, one write would change
// every project).
func (r *Root) WriteText(ctx context.Context, path, content string) error {
	if int64(len(content)) > r.lim.WriteLimit {
		return &FileError{Kind: FileTooLarge, Path: path, Size: int64(len(content)), Limit: r.lim.WriteLimit,
			Message: fmt.Sprintf("refusing to write %d bytes to %s: one write stores at most %d bytes", len(content), path, r.lim.WriteLimit)}
	}
	_, err := r.do(ctx, path, func(ctx context.Context) (string, error) {
		// No O_TRUNC: nothing changes before the descriptor is checked.
		f, fi, err := r.open(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return "", fileErr(FileHardLinked, path, nil,
				"refusing to write %s: it has %d hard links and another of them may be outside the session directory; write a new file or remove the link first",
				path, st.Nlink)
		}
		if ctx.Err() != nil {
			return "", r.ended(ctx, path)
		}
		if err := f.Truncate(0); err != nil {
			return "", fileErr(FileIO, path, err, "writing %s: %v", path, err)
		}
		if _, err := f.WriteString(content); err != nil {
			return "", fileErr(FileIO, path, err, "writing %s: %v", path, err)
		}
		if err := f.Close(); err != nil {
			return "", fileErr(FileIO, path, err, "writing %s: %v", path, err)
		}
		return "", nil
	})
	return err
}

// open opens path inside the root and returns it only if it is a regular
// file, judged by fstat on the opened descriptor (never by a second lookup
// of the name).
func (r *Root) open(path string, flag int, perm os.FileMode) (*os.File, os.FileInfo, error) {
	rel, err := r.rel(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := r.root.OpenFile(rel, flag|openFlags, perm)
	if err != nil && isEscape(err) {
		// os.Root refuses every absolute symlink; one that points back
		// inside the workspace is followed by rewriting the name.
		if name, ok := r.insideName(rel); ok && name != rel {
			f, err = r.root.OpenFile(name, flag|openFlags, perm)
		}
	}
	if err != nil {
		return nil, nil, openError(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fileErr(FileIO, path, err, "stat %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fileErr(FileNotRegular, path, nil, "%s is %s, not a regular file: only regular files are served", path, describeMode(fi.Mode()))
	}
	return f, fi, nil
}

// openError explains why os.Root refused or failed an open.
func openError(path string, err error) error {
	if isEscape(err) {
		return fileErr(FileOutside, path, err, "%s leads outside the session directory (through .. or a symlink)", path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileErr(FileNotFound, path, err, "%s does not exist", path)
	case errors.Is(err, syscall.ENXIO):
		// A FIFO or device opened for writing with nobody on the other end.
		return fileErr(FileNotRegular, path, err, "%s is a named pipe or device, not a regular file: only regular files are served", path)
	case errors.Is(err, syscall.EISDIR):
		return fileErr(FileNotRegular, path, err, "%s is a directory, not a regular file: only regular files are served", path)
	case errors.Is(err, syscall.ENOTDIR):
		return fileErr(FileNotFound, path, err, "%s does not exist (a parent is not a directory)", path)
	case errors.Is(err, syscall.ELOOP):
		return fileErr(FileInvalidPath, path, err, "%s has too many levels of symlinks", path)
	}
	return fileErr(FileIO, path, err, "opening %s: %v", path, err)
}

// isEscape reports os.Root's refusal of "..", absolute or escaping
// symlinks; it has no exported sentinel.
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not a regular file"
}
