package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/internal/buildinfo"
)

// token is the daemon's bearer token and where it came from.
type token struct {
	value string
	// path is the file it was read from or written to; empty when it came
	// from --token or TETHER_TOKEN.
	path string
}

// loadToken returns the explicit token (--token or TETHER_TOKEN), else the
// one in --token-file, else the one stored in the data dir, creating it
// (mode 0600) on first start.
func loadToken(dir, explicit, file string, logger *slog.Logger) (token, error) {
	switch {
	case explicit != "" && file != "":
		return token{}, errors.New("set one of --token (TETHER_TOKEN) and --token-file, not both")
	case explicit != "":
		return token{value: explicit}, nil
	case file != "":
		t, err := readTokenFile(file, logger)
		if err != nil {
			return token{}, err
		}
		if t == "" {
			return token{}, fmt.Errorf("--token-file %s is empty", file)
		}
		return token{value: t, path: file}, nil
	}
	path := filepath.Join(dir, "token")
	if t, err := readTokenFile(path, logger); err == nil {
		if t != "" {
			return token{value: t, path: path}, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return token{}, err
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return token{}, err
	}
	t := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return token{}, fmt.Errorf("write token: %w", err)
	}
	return token{value: t, path: path}, nil
}

// readTokenFile reads a token file, warning when users other than its
// owner may read it.
func readTokenFile(path string, logger *slog.Logger) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("read token: %w", err)
	}
	warnLooseTokenFile(logger, path)
	return strings.TrimSpace(string(b)), nil
}

// printBanner tells the user where the daemon is and how to call it. The
// token itself is shown only on a terminal: stderr that goes to a file or
// a log collector gets the token file's path instead.
func printBanner(w io.Writer, terminal bool, l *edgeListener, dataDir string, tok token) {
	base := l.url()
	fmt.Fprintf(w, "tetherd %s listening on %s\n  data dir: %s\n", buildinfo.Get().Version, base, dataDir)
	switch {
	case terminal:
		fmt.Fprintf(w, "  token:    %s\n  try:      curl -H 'Authorization: Bearer %s' %s/agents\n", tok.value, tok.value, base)
		// The token travels in the fragment, which the browser never sends.
		fmt.Fprintf(w, "\n  Web Shell: %s/shell/#token=%s\n\n", base, tok.value)
		return
	case tok.path != "":
		fmt.Fprintf(w, "  token in: %s\n  try:      curl -H \"Authorization: Bearer $(cat %s)\" %s/agents\n", tok.path, tok.path, base)
	default:
		fmt.Fprintf(w, "  token:    from --token or TETHER_TOKEN\n")
	}
	fmt.Fprintf(w, "\n  Web Shell: %s/shell/#token=<token>\n\n", base)
}

// stderrIsTerminal reports whether stderr is a character device other than
// /dev/null: close enough to "a person is reading" without a terminal
// library.
func stderrIsTerminal() bool {
	fi, err := os.Stderr.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
