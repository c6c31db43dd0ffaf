package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/labstack/echo/v4"
)

func shellTestServer(files fstest.MapFS, built bool) *echo.Echo {
	e := echo.New()
	h := newShellHandler(files, built)
	e.GET("/shell/*", h.serve)
	e.HEAD("/shell/*", h.serve)
	return e
}

func do(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	req.Host = "127.0.0.1:7777" // httptest's example.com is not a host tetherd serves
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var testBuild = fstest.MapFS{
	"index.html":              {Data: []byte(`<!doctype html><script type="module" src="/shell/assets/index-abc123.js"></script>`)},
	"assets/index-abc123.js":  {Data: []byte(`console.log("app")`)},
	"assets/index-def456.css": {Data: []byte(`body{}`)},
	"favicon.svg":             {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	".gitkeep":                {Data: nil},
}

func TestShellServesBuild(t *testing.T) {
	e := shellTestServer(testBuild, true)
	cases := []struct {
		path, ctype, cache string
		status             int
		body               string
	}{
		{"/shell/", "text/html; charset=utf-8", "no-cache", 200, "<!doctype html>"},
		{"/shell/index.html", "text/html; charset=utf-8", "no-cache", 200, "<!doctype html>"},
		{"/shell/assets/index-abc123.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", 200, "console.log"},
		{"/shell/assets/index-def456.css", "text/css; charset=utf-8", "public, max-age=31536000, immutable", 200, "body{}"},
		{"/shell/favicon.svg", "image/svg+xml", "no-cache", 200, "<svg"},
		// Client-side routes fall back to the app page.
		{"/shell/session/123", "text/html; charset=utf-8", "no-cache", 200, "<!doctype html>"},
		{"/shell/assets/", "text/html; charset=utf-8", "no-cache", 200, "<!doctype html>"},
	}
	for _, c := range cases {
		rec := do(t, e, http.MethodGet, c.path, nil)
		if rec.Code != c.status {
			t.Fatalf("%s: status %d, want %d", c.path, rec.Code, c.status)
		}
		if got := rec.Header().Get("Content-Type"); got != c.ctype {
			t.Errorf("%s: content type %q, want %q", c.path, got, c.ctype)
		}
		if got := rec.Header().Get("Cache-Control"); got != c.cache {
			t.Errorf("%s: cache-control %q, want %q", c.path, got, c.cache)
		}
		if !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: body %q lacks %q", c.path, rec.Body.String(), c.body)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", c.path)
		}
	}
	// Scripts only from the shell itself; styles inline too (the terminal's).
	if csp := do(t, e, http.MethodGet, "/shell/", nil).Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") ||
		!strings.Contains(csp, "style-src 'self' 'unsafe-inline';") || !strings.Contains(csp, "img-src 'self' data:;") {
		t.Errorf("index has CSP %q", csp)
	}
}

func TestShellMissingAssetIs404(t *testing.T) {
	e := shellTestServer(testBuild, true)
	for _, p := range []string{"/shell/assets/index-old999.js", "/shell/nope.css", "/shell/../../etc/passwd.txt"} {
		if rec := do(t, e, http.MethodGet, p, nil); rec.Code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404 (body %q)", p, rec.Code, rec.Body.String())
		}
	}
}

func TestShellRevalidatesWithETag(t *testing.T) {
	e := shellTestServer(testBuild, true)
	first := do(t, e, http.MethodGet, "/shell/", nil)
	tag := first.Header().Get("ETag")
	if tag == "" {
		t.Fatal("no ETag on index.html")
	}
	if rec := do(t, e, http.MethodGet, "/shell/", map[string]string{"If-None-Match": tag}); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", rec.Code)
	}
	if rec := do(t, e, http.MethodHead, "/shell/assets/index-abc123.js", nil); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: status %d, body %d bytes", rec.Code, rec.Body.Len())
	}
}

func TestShellPlaceholderWithoutBuild(t *testing.T) {
	e := shellTestServer(fstest.MapFS{".gitkeep": {}}, false)
	for _, p := range []string{"/shell/", "/shell/anything"} {
		rec := do(t, e, http.MethodGet, p, nil)
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", p, rec.Code)
		}
		if !strings.Contains(rec.Body.String(), "make run") || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Errorf("%s: placeholder %q (%s)", p, rec.Body.String(), rec.Header().Get("Content-Type"))
		}
	}
}

// The shell's routes are public; everything else still needs the token,
// also when a path only looks like the shell's once decoded.
func TestShellRoutesBypassOnlyThemselves(t *testing.T) {
	e, err := New(Config{Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	rec := do(t, e, http.MethodGet, "/", nil)
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/shell/" {
		t.Errorf("GET /: %d %q, want 302 to /shell/", rec.Code, rec.Header().Get("Location"))
	}
	if rec := do(t, e, http.MethodGet, "/shell", nil); rec.Code != http.StatusMovedPermanently {
		t.Errorf("GET /shell: %d, want 301", rec.Code)
	}
	if rec := do(t, e, http.MethodGet, "/shell/", nil); rec.Code == http.StatusUnauthorized {
		t.Errorf("GET /shell/ needs no token, got 401")
	}
	for _, p := range []string{"/sessions", "/tasks", "/shell%2F..%2Fsessions", "/agents?x=/shell/"} {
		rec := do(t, e, http.MethodGet, p, nil)
		if rec.Code == http.StatusOK {
			t.Errorf("GET %s without token: 200 (%s)", p, rec.Body.String())
		}
	}
	if rec := do(t, e, http.MethodGet, "/sessions", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /sessions without token: %d, want 401", rec.Code)
	}
	// A traversal that decodes into the shell prefix reaches the shell, never the API.
	rec = do(t, e, http.MethodGet, "/shell/../sessions", nil)
	if strings.Contains(rec.Header().Get("Content-Type"), "json") && rec.Code == http.StatusOK {
		t.Errorf("traversal reached the API: %s", rec.Body.String())
	}
}

func TestIsShellRequest(t *testing.T) {
	for p, want := range map[string]bool{
		"/":                      true,
		"/shell":                 true,
		"/shell/":                true,
		"/shell/assets/a.js":     true,
		"/shellfish":             false,
		"/sessions":              false,
		"/shell%2F..%2Fsessions": false,
	} {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		if got := isShellRequest(req); got != want {
			t.Errorf("isShellRequest(%s) = %v, want %v", p, got, want)
		}
	}
}
