package main_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPprofIsOptInAndAuthenticated runs the real binary without and with
// --pprof: off, the profiler does not exist; on, it needs the token.
func TestPprofIsOptInAndAuthenticated(t *testing.T) {
	bin := binary(t)
	off, offAddr := t.TempDir(), freeAddr(t)
	start(t, bin, off, offAddr)
	on, onAddr := t.TempDir(), freeAddr(t)
	start(t, bin, on, onAddr, "--pprof")
	offToken, onToken := client(t, off, offAddr).token, client(t, on, onAddr).token

	cases := []struct {
		name     string
		addr     string
		token    string
		path     string
		want     int
		wantBody string
	}{
		{"off: index with token", offAddr, offToken, "/debug/pprof/", http.StatusNotFound, ""},
		{"off: heap with token", offAddr, offToken, "/debug/pprof/heap?debug=1", http.StatusNotFound, ""},
		{"on: index without token", onAddr, "", "/debug/pprof/", http.StatusUnauthorized, ""},
		{"on: goroutines without token", onAddr, "", "/debug/pprof/goroutine?debug=2", http.StatusUnauthorized, ""},
		{"on: cmdline with a wrong token", onAddr, "wrong", "/debug/pprof/cmdline", http.StatusUnauthorized, ""},
		{"on: index with token", onAddr, onToken, "/debug/pprof/", http.StatusOK, "goroutine"},
		{"on: goroutines with token", onAddr, onToken, "/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile:"},
		{"on: heap with token", onAddr, onToken, "/debug/pprof/heap?debug=1", http.StatusOK, "heap profile:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "http://"+tc.addr+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("got %d, want %d: %.300s", resp.StatusCode, tc.want, body)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("body %.300q does not contain %q", body, tc.wantBody)
			}
		})
	}
}
