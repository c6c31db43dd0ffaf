// Package api embeds the hand-written OpenAPI contract so the daemon can
// serve it verbatim at GET /openapi.yaml.
package api

import _ "embed"

// Spec is api/openapi.yaml as it was when the binary was built.
//
//go:embed openapi.yaml
var Spec []byte
