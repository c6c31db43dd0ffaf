// Package webshell embeds the built Web Shell (the browser app in this
// directory, built by Vite into dist/) so that tetherd serves it at /shell/.
//
// dist/ holds only a placeholder (.gitkeep) on a fresh clone; `make build`
// (or `make run`) runs the web build first. Built reports whether a real
// build was embedded, so the daemon can explain what to do when it was not.
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

// Built reports whether dist/ holds a real build (an index.html) rather
// than the placeholder committed for fresh clones.
func Built() bool {
	_, err := fs.Stat(FS(), "index.html")
	return err == nil
}
