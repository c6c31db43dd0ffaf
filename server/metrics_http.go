package server

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram: from a cached read (~1 ms) to a long prompt admission. SSE
// and terminal streams land in the last buckets (their duration is how
// long the client stayed), under their own route label.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// routeKey is one series of the latency histogram. The route is echo's
// route template ("/session/:id/events"), never the raw path, so the
// number of series is bounded by the API, not by what clients send.
type routeKey struct{ route, method, code string }

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

// httpMetrics is the request latency histogram of one server.
type httpMetrics struct {
	mu     sync.Mutex
	series map[routeKey]*histogram
}

func newHTTPMetrics() *httpMetrics { return &httpMetrics{series: map[routeKey]*histogram{}} }

// middleware times every request, including those refused by
// authentication or validation: it runs outermost and lets the error
// handler write the response before it reads the status.
func (m *httpMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		m.observe(routeKey{route: routeLabel(c), method: methodLabel(c.Request().Method), code: statusClass(c.Response().Status)},
			time.Since(start).Seconds())
		return nil
	}
}

func (m *httpMetrics) observe(k routeKey, secs float64) {
	i, _ := slices.BinarySearch(latencyBuckets, secs) // first bound >= secs
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.series[k]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.series[k] = h
	}
	h.counts[i]++
	h.sum += secs
	h.n++
}

// write renders the histogram family, series sorted for stable output.
func (m *httpMetrics) write(x *exposition) {
	const name = "tether_http_request_duration_seconds"
	x.family(name, "histogram", "HTTP request latency by route template, method and status class.")
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]routeKey, 0, len(m.series))
	for k := range m.series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b routeKey) int {
		return strings.Compare(a.route+" "+a.method+" "+a.code, b.route+" "+b.method+" "+b.code)
	})
	for _, k := range keys {
		h := m.series[k]
		base := []label{{"route", k.route}, {"method", k.method}, {"code", k.code}}
		var cum uint64
		for i, le := range latencyBuckets {
			cum += h.counts[i]
			x.sample(name+"_bucket", append(base, label{"le", formatValue(le)}), float64(cum))
		}
		x.sample(name+"_bucket", append(base, label{"le", "+Inf"}), float64(h.n))
		x.sample(name+"_sum", base, h.sum)
		x.sample(name+"_count", base, float64(h.n))
	}
}

// routeLabel is the route template echo matched (for a 404 or 405, the
// closest registered template); requests that matched nothing share one
// label, so scanning random paths adds no series.
func routeLabel(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return "unmatched"
}

// methodLabel keeps the label set bounded: unusual methods share "other".
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "other"
}

func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return string(rune('0'+code/100)) + "xx"
}
