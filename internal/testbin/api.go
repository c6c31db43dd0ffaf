package testbin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// DoJSON sends an API request to base (http://host:port) with the bearer
// token, body as JSON unless nil, and returns the status and the JSON
// answer (nil when there is none), failing tb if the request cannot be
// made or the answer does not decode. The black-box suites' API client.
func DoJSON(tb testing.TB, base, token, method, path string, body any) (int, map[string]any) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(b, &m); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, m
}

// List returns a JSON array member of m as a slice of objects (its other
// elements dropped).
func List(m map[string]any, key string) []map[string]any {
	raw, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		if o, ok := x.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}
