// Package client is Tether's Go client. The calls and types are generated
// from the contract, api/openapi.yaml, by oapi-codegen (client.gen.go, never
// edited); written by hand on top are only what the contract cannot say:
// how to reach a daemon (Dial), problem answers as errors (Check), and the
// event stream with its cursor and reconnects (stream.go).
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// DefaultAddr is where tetherd listens unless told otherwise (its --addr).
const DefaultAddr = "127.0.0.1:7777"

// BaseURL is the daemon's URL for addr: a URL as given (http:// or
// https://), else host:port over plain HTTP, as tetherd's --addr is
// written.
func BaseURL(addr string) string {
	if addr == "" {
		addr = DefaultAddr
	}
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return strings.TrimRight(addr, "/")
	}
	return "http://" + addr
}

// Dial returns a client of the daemon at addr (BaseURL) that sends token
// as its bearer token with every request. hc is the HTTP client to use
// (nil: one with no timeout, as event streams run for as long as they
// are read).
func Dial(addr, token string, hc *http.Client) (*ClientWithResponses, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	return NewClientWithResponses(BaseURL(addr)+"/", WithHTTPClient(hc), WithRequestEditorFn(Bearer(token)))
}

// Bearer is a request editor that authenticates with token.
func Bearer(token string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

// Error is a problem the daemon answered (RFC 9457 problem+json): its
// Code is stable, for scripts to match on.
type Error struct {
	Status  int
	Problem Problem
}

func (e *Error) Error() string {
	msg := e.Problem.Title
	if e.Problem.Detail != nil && *e.Problem.Detail != "" {
		msg = *e.Problem.Detail
	}
	if e.Problem.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, msg)
	}
	return fmt.Sprintf("%s: %s", e.Problem.Code, msg)
}

// Code is err's problem code ("" when err is no *Error).
func Code(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Problem.Code
	}
	return ""
}

// Response is what every generated response has.
type Response interface{ StatusCode() int }

// Check turns a call's outcome into an error: the transport's error, or
// the problem of an answer that is not 2xx (body is the answer's Body).
func Check(r Response, body []byte, err error) error {
	if err != nil {
		return err
	}
	status := r.StatusCode()
	if status >= 200 && status < 300 {
		return nil
	}
	e := &Error{Status: status}
	if json.Unmarshal(body, &e.Problem) != nil || e.Problem.Title == "" {
		e.Problem.Title = strings.TrimSpace(string(body))
		if e.Problem.Title == "" {
			e.Problem.Title = http.StatusText(status)
		}
	}
	return e
}
