// Package buildinfo says which tetherd this is: its release version, the
// commit it was built from and when, and the API contract it serves.
//
// `make` (and `make dist`) stamp version, commit and date with -ldflags -X
// (see Makefile LDFLAGS). A plain `go build` or `go install …@v` is not
// stamped; Get then falls back to what the Go toolchain recorded in the
// binary (runtime/debug.ReadBuildInfo: the module version of `go install
// …@v1.2.3`, vcs.revision and vcs.time of a build inside a git checkout).
package buildinfo

import (
	"runtime/debug"
	"strings"
	"sync"

	"github.com/tether/tether/api"
)

// Stamped by the linker: -X github.com/tether/tether/internal/buildinfo.version=...
var (
	version string
	commit  string
	date    string
)

// Info describes one tetherd build.
type Info struct {
	// Version is the release version ("0.1.0", a Go pseudo-version, or
	// "devel" for an unstamped build outside a module download).
	Version string
	// Commit is the git revision, "" when unknown.
	Commit string
	// Date is the commit or build time (RFC 3339), "" when unknown.
	Date string
	// Modified reports a build from a checkout with uncommitted changes.
	Modified bool
	// API is the contract version the daemon serves: info.version of
	// api/openapi.yaml, which the SDK's version follows.
	API string
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's build information (computed once).
func Get() Info {
	once.Do(func() {
		var bi *debug.BuildInfo
		if b, ok := debug.ReadBuildInfo(); ok {
			bi = b
		}
		info = resolve(version, commit, date, bi, api.Version())
	})
	return info
}

// resolve prefers the linker stamps and fills what they leave empty from
// the toolchain's build information.
func resolve(version, commit, date string, bi *debug.BuildInfo, apiVersion string) Info {
	out := Info{Version: version, Commit: commit, Date: date, API: apiVersion}
	if bi != nil {
		if out.Version == "" {
			if v := bi.Main.Version; v != "" && v != "(devel)" {
				out.Version = v
			}
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if out.Commit == "" {
					out.Commit = s.Value
				}
			case "vcs.time":
				if out.Date == "" {
					out.Date = s.Value
				}
			case "vcs.modified":
				if commit == "" && s.Value == "true" {
					out.Modified = true
				}
			}
		}
	}
	if strings.HasSuffix(out.Commit, "-dirty") {
		out.Commit, out.Modified = strings.TrimSuffix(out.Commit, "-dirty"), true
	}
	out.Version = strings.TrimPrefix(out.Version, "v")
	if out.Version == "" {
		out.Version = "devel"
	}
	return out
}

// String is the one-line form `tetherd version` prints.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString("tetherd " + i.Version)
	b.WriteString(" (api " + i.API + ")")
	c := i.Commit
	if c == "" {
		c = "unknown"
	}
	if i.Modified {
		c += "-dirty"
	}
	b.WriteString("\ncommit: " + c)
	d := i.Date
	if d == "" {
		d = "unknown"
	}
	b.WriteString("\nbuilt:  " + d)
	return b.String()
}
