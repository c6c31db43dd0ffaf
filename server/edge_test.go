package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// chunked hides a reader's length, so net/http sends it chunked.
type chunked struct{ io.Reader }

func TestRequestBodiesAreOneJSONValueWithinTheLimit(t *testing.T) {
	d := startDaemon(t, daemonOptions{}) // body limit 64K
	overLimit := `{"title":"` + strings.Repeat("x", 70<<10) + `"}`
	cases := []struct {
		name       string
		body       io.Reader
		wantStatus int
		wantCode   string
	}{
		{"one value", strings.NewReader(`{"title":"x"}`), http.StatusCreated, ""},
		{"trailing whitespace", strings.NewReader("{\"title\":\"x\"} \r\n\t"), http.StatusCreated, ""},
		{"trailing garbage", strings.NewReader(`{"title":"x"} GARBAGE`), http.StatusBadRequest, "malformed_json"},
		{"second value", strings.NewReader(`{"title":"x"}{"title":"y"}`), http.StatusBadRequest, "malformed_json"},
		{"trailing garbage chunked", chunked{strings.NewReader(`{"title":"x"} ]`)}, http.StatusBadRequest, "malformed_json"},
		{"over limit with length", strings.NewReader(overLimit), http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"over limit chunked", chunked{strings.NewReader(overLimit)}, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"within limit chunked", chunked{strings.NewReader(`{"title":"x"}`)}, http.StatusCreated, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", d.URL+"/tasks", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			r := d.send(req)
			if r.Status != tc.wantStatus {
				t.Fatalf("got %d, want %d: %s", r.Status, tc.wantStatus, r.Body)
			}
			if tc.wantCode != "" {
				if got := r.JSON(t)["code"]; got != tc.wantCode {
					t.Errorf("got code %v, want %s", got, tc.wantCode)
				}
			}
		})
	}
}

func TestHostHeaderMustNameThisDaemon(t *testing.T) {
	d := startDaemon(t, daemonOptions{allowedHosts: []string{"tether.example", "*.dev.example"}})
	cases := []struct {
		name, host, path string
		want             int
	}{
		{"listener address", "", "/agents", http.StatusOK},
		{"localhost with port", "localhost:7777", "/agents", http.StatusOK},
		{"localhost upper case", "LOCALHOST", "/agents", http.StatusOK},
		{"loopback ipv4", "127.0.0.1:1", "/agents", http.StatusOK},
		{"loopback ipv6", "[::1]:7777", "/agents", http.StatusOK},
		{"lan ip literal", "192.168.1.20:7777", "/agents", http.StatusOK},
		{"configured name", "tether.example:443", "/agents", http.StatusOK},
		{"configured wildcard", "a.dev.example", "/agents", http.StatusOK},
		{"rebinding name", "evil.example:7777", "/agents", http.StatusForbidden},
		{"wildcard parent itself", "dev.example", "/agents", http.StatusForbidden},
		{"suffix lookalike", "eviltether.example", "/agents", http.StatusForbidden},
		{"rebinding name on health", "evil.example", "/health", http.StatusForbidden},
		{"rebinding name on the shell", "evil.example", "/shell/", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", d.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			r := d.send(req)
			if r.Status != tc.want {
				t.Fatalf("got %d, want %d: %s", r.Status, tc.want, r.Body)
			}
			if tc.want == http.StatusForbidden {
				if got := r.JSON(t)["code"]; got != "host_not_allowed" {
					t.Errorf("got code %v, want host_not_allowed", got)
				}
			}
		})
	}
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	cases := []struct {
		name, header string
		want         int
	}{
		{"canonical", "Bearer " + testToken, http.StatusOK},
		{"lower case", "bearer " + testToken, http.StatusOK},
		{"upper case", "BEARER " + testToken, http.StatusOK},
		{"two spaces", "Bearer  " + testToken, http.StatusOK},
		{"no space", "Bearer" + testToken, http.StatusUnauthorized},
		{"scheme only", "Bearer", http.StatusUnauthorized},
		{"other scheme", "Token " + testToken, http.StatusUnauthorized},
		{"token with suffix", "bearer " + testToken + "x", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.doRaw("GET", "/agents", nil, map[string]string{"Authorization": tc.header})
			if r.Status != tc.want {
				t.Fatalf("got %d, want %d: %s", r.Status, tc.want, r.Body)
			}
		})
	}
}
