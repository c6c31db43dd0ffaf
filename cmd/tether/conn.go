package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"

	"github.com/tether/tether/client"
	"github.com/tether/tether/internal/buildinfo"
)

// globals are the flags every command has, and the daemon they lead to.
type globals struct {
	addr, tokenFile string
}

// conn is a daemon to talk to: its address, token and client.
type conn struct {
	addr, token string
	api         *client.ClientWithResponses
}

// dial finds the daemon and its token as the root command's help says.
func (g *globals) dial() (*conn, error) {
	addr := g.addr
	if addr == "" {
		addr = os.Getenv("TETHER_ADDR")
	}
	if addr == "" {
		addr = client.DefaultAddr
	}
	token, err := g.token()
	if err != nil {
		return nil, err
	}
	api, err := client.Dial(addr, token, nil)
	if err != nil {
		return nil, usagef("--addr %q: %v", addr, err)
	}
	return &conn{addr: addr, token: token, api: api}, nil
}

// token is the daemon's bearer token: --token-file, $TETHER_TOKEN,
// $TETHER_TOKEN_FILE, or the daemon's own token file in its data dir.
func (g *globals) token() (string, error) {
	file := g.tokenFile
	if file == "" {
		if t := os.Getenv("TETHER_TOKEN"); t != "" {
			return t, nil
		}
		file = os.Getenv("TETHER_TOKEN_FILE")
	}
	if file == "" {
		file = filepath.Join(dataDir(), "token")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", exitError{exitUnreachable, fmt.Sprintf("no token: %v (set TETHER_TOKEN, or --token-file; tetherd writes its token to <data-dir>/token)", err)}
	}
	return strings.TrimSpace(string(b)), nil
}

// dataDir is tetherd's default data dir (its --data-dir's default).
func dataDir() string {
	if d := os.Getenv("TETHER_DATA_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "tether")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "tether")
}

// isUnreachable reports whether err is the daemon not answering at all.
func isUnreachable(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout())
}

// call checks a generated call's outcome (check) and returns its response.
func call[R client.Response](r R, err error) (R, error) {
	if err != nil {
		return r, err
	}
	return r, check(r, bodyOf(r), nil)
}

// bodyOf is a generated response's Body (each response type has one).
func bodyOf(r any) []byte {
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	if f := v.Elem().FieldByName("Body"); f.IsValid() && f.Kind() == reflect.Slice {
		return f.Bytes()
	}
	return nil
}

// check is client.Check, with an answer the daemon refused for want of a
// valid token said plainly (authErr).
func check(r client.Response, body []byte, err error) error {
	return authErr(client.Check(r, body, err))
}

// authErr is err, but exit 3 with a hint when the daemon refused the
// token: the client is pointed at the wrong daemon, or holds a stale token.
func authErr(err error) error {
	if client.Code(err) == "unauthorized" {
		return exitError{exitUnreachable, err.Error() + " (the token is not this daemon's: see --token-file)"}
	}
	return err
}

// version is what `tether version` prints: tetherd's stamps, as both are
// built from one commit (make build, make dist).
func version() string { return "tether" + strings.TrimPrefix(buildinfo.Get().String(), "tetherd") }
