// Package webshell embeds the built Web Shell (the browser app in this
// directory, built by Vite into dist/) so that tetherd serves it at /shell/.
//
// dist/ is committed, built (`make web`, deterministic output), so that a
// plain `go build ./cmd/tetherd` or `go install` embeds a working shell
// without an npm step; `make check-web` fails when it is out of date with
// the sources. Built reports whether a build was embedded (a checkout whose
// dist/ was emptied), so the daemon can explain what to do when it was not.
package webshell

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// FS returns the built app rooted at dist/ (index.html, assets/...).
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at compile time; Sub cannot fail
	}
	return sub
}

// Built reports whether dist/ holds a build (an index.html).
func Built() bool {
	_, err := fs.Stat(FS(), "index.html")
	return err == nil
}
