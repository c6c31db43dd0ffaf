package main_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTokenSourcesAndWarnings(t *testing.T) {
	bin := binary(t)
	const secret = "file-token-0123456789"
	cases := []struct {
		name      string
		mode      os.FileMode // of the token file; 0: no --token-file
		flagToken bool        // pass --token on the command line
		wantWarn  string      // in the log; "" for none of the warnings
	}{
		{"private token file", 0o600, false, ""},
		{"group readable token file", 0o640, false, "readable or writable by other users"},
		{"world readable token file", 0o644, false, "readable or writable by other users"},
		{"token on the command line", 0, true, "visible to every local user in ps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, addr := t.TempDir(), freeAddr(t)
			var extra []string
			if tc.mode != 0 {
				file := filepath.Join(t.TempDir(), "tok")
				if err := os.WriteFile(file, []byte(secret+"\n"), tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(file, tc.mode); err != nil { // past the umask
					t.Fatal(err)
				}
				extra = append(extra, "--token-file", file)
			}
			if tc.flagToken {
				extra = append(extra, "--token", secret)
			}
			_, logs := start(t, bin, dir, addr, extra...)
			out := logs.String()
			if strings.Contains(out, secret) {
				t.Errorf("the log shows the token:\n%s", out)
			}
			for _, w := range []string{"readable or writable by other users", "visible to every local user in ps"} {
				if got, want := strings.Contains(out, w), w == tc.wantWarn; got != want {
					t.Errorf("warning %q in the log: got %v, want %v\n%s", w, got, want, out)
				}
			}
			req, _ := http.NewRequest("GET", "http://"+addr+"/agents", nil)
			req.Header.Set("Authorization", "Bearer "+secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /agents with the token: got %d, want 200", resp.StatusCode)
			}
			if _, err := os.Stat(filepath.Join(dir, "token")); err == nil {
				t.Errorf("a token was generated into the data dir although one was given")
			}
		})
	}
}

func TestRefusedStartOptions(t *testing.T) {
	bin := binary(t)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"token and token file", []string{"--token", "x", "--token-file", empty}, "not both"},
		{"empty token file", []string{"--token-file", empty}, "is empty"},
		{"missing token file", []string{"--token-file", empty + ".nope"}, "no such file"},
		{"cert without key", []string{"--tls-cert", empty}, "--tls-cert and --tls-key go together"},
		{"plain http on every interface", []string{"--addr", "0.0.0.0:0"}, "--insecure-http"},
		{"zero connections", []string{"--max-connections", "0"}, "--max-connections must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := append([]string{"serve", "--data-dir", t.TempDir(), "--addr", freeAddr(t), "--executor", "standalone"}, tc.args...)
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "TETHER_TOKEN=")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("got a running daemon, want refusal\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("got %q, want a message containing %q", out, tc.want)
			}
		})
	}
}
