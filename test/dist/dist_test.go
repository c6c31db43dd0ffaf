// Package dist checks the release archives `make dist` writes: checksums,
// contents, architectures, and that the linux/amd64 tetherd starts here and
// serves the API and the Web Shell. `make test-dist` builds the archives and
// runs it (TETHER_DIST names the directory); without TETHER_DIST it skips.
package dist

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// archive is one release tarball, unpacked into a temp dir.
type archive struct {
	name string // tetherd-<version>-linux-<arch>
	dir  string // where it was unpacked (holds name/)
}

func TestDistArchive(t *testing.T) {
	dist := os.Getenv("TETHER_DIST")
	if dist == "" {
		t.Skip("TETHER_DIST is not set: run make test-dist")
	}
	version := os.Getenv("VERSION")
	sums := checksums(t, dist)
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	archives := map[string]archive{}
	root := t.TempDir() // outlives the subtests: the amd64 binary runs after them
	for arch, machine := range machines {
		t.Run(arch, func(t *testing.T) {
			file := "tetherd-" + version + "-linux-" + arch + ".tar.gz"
			if _, ok := sums[file]; !ok {
				t.Fatalf("SHA256SUMS lists %v, want %s", keys(sums), file)
			}
			a := unpack(t, filepath.Join(dist, file), filepath.Join(root, arch))
			for _, f := range []string{"tetherd", "tether", "LICENSE", "NOTICE", "THIRD_PARTY_LICENSES", "README.md", "docs/install.md"} {
				if _, err := os.Stat(filepath.Join(a.dir, a.name, f)); err != nil {
					t.Errorf("%s lacks %s", file, f)
				}
			}
			e, err := elf.Open(filepath.Join(a.dir, a.name, "tetherd"))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Machine != machine {
				t.Errorf("%s: tetherd is for %v, want %v", file, e.Machine, machine)
			}
			third, _ := os.ReadFile(filepath.Join(a.dir, a.name, "THIRD_PARTY_LICENSES"))
			for _, want := range []string{"github.com/mattn/go-sqlite3", "github.com/labstack/echo/v4", "preact", "dompurify"} {
				if !strings.Contains(string(third), want) {
					t.Errorf("THIRD_PARTY_LICENSES does not name %s", want)
				}
			}
			archives[arch] = a
		})
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the amd64 archive's tetherd cannot run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	a, ok := archives["amd64"]
	if !ok {
		t.Fatal("no amd64 archive unpacked")
	}
	bin := filepath.Join(a.dir, a.name, "tetherd")
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tetherd "+version) {
		t.Fatalf("tetherd version: got %q (%v), want it to name %s", out, err, version)
	}
	client := filepath.Join(a.dir, a.name, "tether")
	if out, err := exec.Command(client, "version").CombinedOutput(); err != nil || !strings.Contains(string(out), "tether "+version) {
		t.Fatalf("tether version: got %q (%v), want it to name %s", out, err, version)
	}
	serveAndCheck(t, bin, version)
}

// serveAndCheck starts bin and checks /health and the embedded Web Shell.
func serveAndCheck(t *testing.T, bin, version string) {
	t.Helper()
	addr := testbin.FreeAddr(t)
	logs := &testbin.LogBuffer{}
	cmd := exec.Command(bin, "serve", "--data-dir", t.TempDir(), "--addr", addr, "--executor", "standalone")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "TETHER_TOKEN=dist-test-token")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var health struct{ Status, Version, APIVersion string }
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the archive's tetherd did not answer /health: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if health.Status != "ok" || health.Version != version || health.APIVersion == "" {
		t.Errorf("/health: got %+v, want status ok, version %s, an apiVersion", health, version)
	}
	resp, err := http.Get("http://" + addr + "/shell/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `<script type="module"`) {
		t.Errorf("/shell/: got %d %.200q, want 200 and the built Web Shell", resp.StatusCode, body)
	}
}

// checksums reads SHA256SUMS and verifies every archive it lists.
func checksums(t *testing.T, dist string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q: want '<sum>  <file>'", line)
		}
		data, err := os.ReadFile(filepath.Join(dist, file))
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: sha256 %x, SHA256SUMS says %s", file, got, sum)
		}
		sums[file] = sum
	}
	return sums
}

// unpack extracts a .tar.gz into dir; every entry must sit under the
// archive's own top-level directory.
func unpack(t *testing.T, path, dir string) archive {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	a := archive{name: strings.TrimSuffix(filepath.Base(path), ".tar.gz"), dir: dir}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != a.name+"/" && !strings.HasPrefix(h.Name, a.name+"/") || strings.Contains(h.Name, "..") {
			t.Fatalf("%s: entry %q is outside %s/", path, h.Name, a.name)
		}
		target := filepath.Join(a.dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			out.Close()
		default:
			t.Fatalf("%s: entry %q has type %c, want files and directories only", path, h.Name, h.Typeflag)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
