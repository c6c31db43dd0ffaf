package connlimit

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Handler wraps next with the per-request deadlines and the bookkeeping
// that tells busy connections from idle ones.
//
// The deadlines are per request rather than http.Server's ReadTimeout and
// WriteTimeout: ReadTimeout also cuts the connection's background read
// once the body is in, which cancels the request's context, so a slow
// handler (starting an agent) or an event stream would die with it; and
// WriteTimeout runs from the end of the headers, so it would count the
// handler's own work. Here the body must arrive within BodyTimeout of the
// handler's start (the read deadline is lifted once it has), and the
// response must be written within WriteTimeout of its first byte. An event
// stream moves its write deadline forward on every flush.
func (l *Listener) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		rc := http.NewResponseController(w)
		hasBody := r.Body != nil && r.Body != http.NoBody
		if c != nil {
			if hasBody {
				c.update(1, 1)
			} else {
				c.update(1, 0)
			}
		}
		var body *trackedBody
		if hasBody {
			if l.cfg.BodyTimeout > 0 {
				_ = rc.SetReadDeadline(time.Now().Add(l.cfg.BodyTimeout))
			}
			body = &trackedBody{ReadCloser: r.Body, conn: c, rc: rc, timed: l.cfg.BodyTimeout > 0}
			r.Body = body
		}
		defer func() {
			if body != nil {
				body.finish(false)
			}
			if c != nil {
				c.update(-1, 0)
			}
		}()
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, d: l.cfg.WriteTimeout}, r)
	})
}

// trackedBody notices when a request body has been read to its end.
type trackedBody struct {
	io.ReadCloser
	conn  *conn
	rc    *http.ResponseController
	timed bool
	once  sync.Once
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.finish(true)
	}
	return n, err
}

// finish records that the body is no longer being received. At its end
// the read deadline is lifted: net/http then reads in the background to
// notice the client leaving, and a deadline there would cancel the
// request's context while the handler still works.
func (b *trackedBody) finish(atEOF bool) {
	b.once.Do(func() {
		if atEOF && b.timed {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
		if b.conn != nil {
			b.conn.update(0, -1)
		}
	})
}

// deadlineWriter sets the write deadline when the response starts.
type deadlineWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	d     time.Duration
	armed bool
}

func (w *deadlineWriter) arm() {
	if !w.armed && w.d > 0 {
		w.armed = true
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach net/http's writer (flushing,
// deadlines, hijacking).
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
