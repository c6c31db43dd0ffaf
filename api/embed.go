// Package api embeds the hand-written OpenAPI contract so the daemon can
// serve it verbatim at GET /openapi.yaml.
package api

import (
	_ "embed"
	"sync"

	"gopkg.in/yaml.v3"
)

// Spec is api/openapi.yaml as it was when the binary was built.
//
//go:embed openapi.yaml
var Spec []byte

// Version is the contract's info.version: the API version tetherd serves
// (in /health as apiVersion) and the version of the TypeScript SDK
// generated from it.
func Version() string { return specVersion() }

// specVersion parses the contract once, when first asked: not at start-up
// of every tetherd process (a sandbox's init, a demo agent), where the
// parse was the costliest package init (6 ms).
var specVersion = sync.OnceValue(func() string {
	var doc struct {
		Info struct {
			Version string `yaml:"version"`
		} `yaml:"info"`
	}
	if err := yaml.Unmarshal(Spec, &doc); err != nil || doc.Info.Version == "" {
		panic("api/openapi.yaml: no info.version") // the embedded contract is checked by every test
	}
	return doc.Info.Version
})
