package hosted_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path; its packages live under the
// repository root, two directories up from here.
const module = "github.com/tether/tether/"

// TestSessionCoreImportsNoHostClient keeps the seam this package exists
// for: the session core knows agents on executor hosts by its own
// interfaces only, so neither it nor anything it imports pulls in the
// host protocol's client (internal/executor) or this adapter.
func TestSessionCoreImportsNoHostClient(t *testing.T) {
	deps := internalDeps(t, "internal/sessions")
	for _, banned := range []string{"internal/executor", "internal/hosted"} {
		if slices.Contains(deps, banned) {
			t.Errorf("internal/sessions imports %s (directly or not); got deps %v", banned, deps)
		}
	}
}

// TestRuntimesImportNoSessionCore keeps the other side of the seam: the
// runtimes (package runtimes, this adapter) know nothing of the session
// core, so the core is free to change without them.
func TestRuntimesImportNoSessionCore(t *testing.T) {
	for _, pkg := range []string{"internal/runtimes", "internal/hosted"} {
		if deps := internalDeps(t, pkg); slices.Contains(deps, "internal/sessions") {
			t.Errorf("%s imports internal/sessions (directly or not); got deps %v", pkg, deps)
		}
	}
}

// internalDeps lists the module's packages pkg imports, directly or not
// (non-test files of this platform, as the build sees them).
func internalDeps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		bp, err := build.ImportDir(filepath.Join("..", "..", filepath.FromSlash(p)), 0)
		if err != nil {
			t.Fatalf("read package %s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			walk(rel)
		}
	}
	walk(pkg)
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
