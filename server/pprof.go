package server

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/labstack/echo/v4"
)

// pprofPrefix is where the Go profiler is served when Config.Pprof is set.
const pprofPrefix = "/debug/pprof/"

// registerPprof serves net/http/pprof under /debug/pprof/ on the API's own
// listener, behind the same bearer token as every other route (the
// authentication middleware does not exempt it). It is off by default:
// a CPU or trace profile costs CPU for as long as the caller asks, and
// goroutine dumps and /cmdline show internals (the command line includes a
// --token given as a flag), so only operators who need it turn it on.
func registerPprof(e *echo.Echo) {
	e.GET(pprofPrefix+"*", echo.WrapHandler(http.HandlerFunc(servePprof)))
	e.POST(pprofPrefix+"symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	e.GET(strings.TrimSuffix(pprofPrefix, "/"), func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, pprofPrefix)
	})
}

// servePprof dispatches to the named profile, or to the index.
func servePprof(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, pprofPrefix) {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r) // the index, and named profiles (heap, goroutine, …)
	}
}

// isPprofRequest reports a request for the profiler, which is not an API
// operation and so skips request validation (never authentication).
func isPprofRequest(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, pprofPrefix) || r.URL.Path == strings.TrimSuffix(pprofPrefix, "/")
}
