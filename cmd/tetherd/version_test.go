package main_test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tether/tether/internal/testbin"
)

// TestVersionIsStampedAndServed builds tetherd the way make does (version,
// commit and date through -ldflags -X), then checks that `tetherd version`
// prints them and that /health and /openapi.yaml carry them.
func TestVersionIsStampedAndServed(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tetherd")
	const pkg = "github.com/tether/tether/internal/buildinfo"
	ldflags := "-X " + pkg + ".version=9.8.7 -X " + pkg + ".commit=0123456789abcdef -X " + pkg + ".date=2026-12-01T12:00:00Z"
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./cmd/tetherd")
	build.Dir = testbin.Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("tetherd version: %v\n%s", err, out)
	}
	for _, want := range []string{"tetherd 9.8.7", "commit: 0123456789abcdef", "built:  2026-12-01T12:00:00Z", "api "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tetherd version printed %q, want it to contain %q", out, want)
		}
	}

	dir, addr := t.TempDir(), freeAddr(t)
	start(t, bin, dir, addr)
	c := client(t, dir, addr)
	status, body := c.do("GET", "/health", nil)
	if status != http.StatusOK {
		t.Fatalf("/health: got %d, want 200: %s", status, body)
	}
	var health struct{ Version, APIVersion, Commit string }
	if err := json.Unmarshal(body, &health); err != nil {
		t.Fatal(err)
	}
	status, body = c.do("GET", "/openapi.yaml", nil)
	if status != http.StatusOK {
		t.Fatalf("/openapi.yaml: got %d, want 200", status)
	}
	var spec struct {
		Info struct{ Version string } `yaml:"info"`
	}
	if err := yaml.Unmarshal(body, &spec); err != nil {
		t.Fatal(err)
	}
	if health.Version != "9.8.7" || health.Commit != "0123456789abcdef" {
		t.Errorf("/health: got version %q commit %q, want 9.8.7 0123456789abcdef", health.Version, health.Commit)
	}
	if health.APIVersion == "" || health.APIVersion != spec.Info.Version {
		t.Errorf("/health apiVersion %q, want the served contract's info.version %q", health.APIVersion, spec.Info.Version)
	}
	if !strings.Contains(string(out), "api "+spec.Info.Version) {
		t.Errorf("tetherd version printed %q, want api %s", out, spec.Info.Version)
	}
}
