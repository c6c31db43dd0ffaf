package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether/tether/webshell"
)

// The Web Shell is public: its files hold no data (the token reaches the
// browser in the URL fragment, which never leaves it), so /shell/ and the
// redirect at / bypass bearer auth and the OpenAPI request validator.
const shellPrefix = "/shell/"

// isShellRequest reports whether r is for the Web Shell handler: both the
// decoded and the escaped path must say so, so that an encoded path cannot
// borrow the exemption for a route the router matches differently.
func isShellRequest(r *http.Request) bool {
	return isShellPath(r.URL.Path) && isShellPath(r.URL.EscapedPath())
}

func isShellPath(p string) bool {
	return p == "/" || p == "/shell" || strings.HasPrefix(p, shellPrefix)
}

// shellContentTypes pins the types of what Vite emits, so they do not
// depend on the host's mime.types.
var shellContentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".ico":         "image/x-icon",
	".woff2":       "font/woff2",
	".txt":         "text/plain; charset=utf-8",
	".webmanifest": "application/manifest+json",
}

// shellCSP allows only the shell's own scripts and API calls to this
// origin. Styles may also be inline: the terminal (xterm.js) sizes and
// colours its screen with <style> elements and style attributes it writes
// at run time. What an agent sends never gets there (Markdown is sanitized
// to an allow-list without style), and CSS could not send anything out
// anyway: images, fonts and connections are limited to this origin.
const shellCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"

// registerWebShell adds GET / (redirect) and GET /shell/* (the embedded app).
func registerWebShell(e *echo.Echo) {
	h := newShellHandler(webshell.FS(), webshell.Built())
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, shellPrefix) })
	e.HEAD("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, shellPrefix) })
	e.GET("/shell", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, shellPrefix) })
	e.GET("/shell/*", h.serve)
	e.HEAD("/shell/*", h.serve)
}

type shellHandler struct {
	files fs.FS
	built bool
	mu    sync.Mutex
	etags map[string]string
}

func newShellHandler(files fs.FS, built bool) *shellHandler {
	return &shellHandler{files: files, built: built, etags: map[string]string{}}
}

func (h *shellHandler) serve(c echo.Context) error {
	w := c.Response()
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !h.built {
		return h.placeholder(c)
	}
	name := strings.TrimPrefix(path.Clean("/"+c.Param("*")), "/")
	data, ok := h.read(name)
	switch {
	case ok:
	case path.Ext(name) != "" && name != "":
		// A missing asset is a 404, never the app page: a stale tab asking
		// for an old hashed bundle must fail loudly, not parse HTML as JS.
		return echo.NewHTTPError(http.StatusNotFound, "no such file in the Web Shell: "+name)
	default:
		// Client-side routes fall back to the app.
		name = "index.html"
		if data, ok = h.read(name); !ok {
			return h.placeholder(c)
		}
	}
	ext := path.Ext(name)
	ctype := shellContentTypes[ext]
	if ctype == "" {
		if ctype = mime.TypeByExtension(ext); ctype == "" {
			ctype = http.DetectContentType(data)
		}
	}
	w.Header().Set(echo.HeaderContentType, ctype)
	if strings.HasPrefix(name, "assets/") {
		// Vite puts a content hash in every file name under assets/.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	if ext == ".html" {
		w.Header().Set("Content-Security-Policy", shellCSP)
		w.Header().Set("X-Frame-Options", "DENY")
	}
	w.Header().Set("ETag", h.etag(name, data))
	http.ServeContent(w, c.Request(), name, time.Time{}, bytes.NewReader(data))
	return nil
}

// read returns a regular file of the build.
func (h *shellHandler) read(name string) ([]byte, bool) {
	if name == "" || !fs.ValidPath(name) {
		return nil, false
	}
	fi, err := fs.Stat(h.files, name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := fs.ReadFile(h.files, name)
	return data, err == nil
}

func (h *shellHandler) etag(name string, data []byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.etags[name]; ok {
		return t
	}
	sum := sha256.Sum256(data)
	t := `"` + hex.EncodeToString(sum[:8]) + `"`
	h.etags[name] = t
	return t
}

// placeholder answers when the binary was built without the web build.
func (h *shellHandler) placeholder(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTML(http.StatusServiceUnavailable, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tether Web Shell not built</title>
<meta name="viewport" content="width=device-width,initial-scale=1"></head>
<body style="font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem">
<h1>The Web Shell is not built into this tetherd</h1>
<p>This binary was compiled without the browser app. From the repository, run</p>
<pre style="background:#f3f4f6;padding:.75rem;border-radius:6px">make run</pre>
<p>which builds the Web Shell (npm), embeds it, and starts the daemon. The API works as usual meanwhile.</p>
</body></html>
`)
}
