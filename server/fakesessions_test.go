package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/server"
)

// fakeSessions is a session core that answers POST /session/{id}/cancel
// with what the test sets, and remembers which session it was asked for.
// The embedded interface is nil: a handler calling anything else panics,
// and the test sees a 500.
type fakeSessions struct {
	server.Sessions
	res sessions.CancelResult
	err error

	mu    sync.Mutex
	asked []string
}

func (f *fakeSessions) Cancel(_ context.Context, sessionID string, _ sessions.CancelInput) (sessions.CancelResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, sessionID)
	return f.res, f.err
}

// TestHandlerOnFakeSessions serves the API on a fake session core over
// real HTTP: what the core answers (a result, a domain error code, an
// error of no code) becomes the response the contract says, with the
// status the one table (problem.go) gives each code, and an unclassified
// error's text stays in the daemon.
func TestHandlerOnFakeSessions(t *testing.T) {
	cases := []struct {
		name       string
		res        sessions.CancelResult
		err        error
		wantStatus int
		wantCode   errcode.Code
		wantDetail string
	}{
		{name: "a result is the contract's body", res: sessions.CancelResult{Cancelled: true, PromptID: "p1"}, wantStatus: http.StatusOK},
		{name: "an unknown session is 404", err: errcode.New(errcode.SessionNotFound, "no session s1"),
			wantStatus: http.StatusNotFound, wantCode: errcode.SessionNotFound, wantDetail: "no session s1"},
		{name: "a closed session is a conflict", err: errcode.New(errcode.SessionTerminal, "session is closed"),
			wantStatus: http.StatusConflict, wantCode: errcode.SessionTerminal, wantDetail: "session is closed"},
		{name: "an overloaded session is retried later", err: errcode.New(errcode.SessionOverloaded, "too many requests queued"),
			wantStatus: http.StatusServiceUnavailable, wantCode: errcode.SessionOverloaded, wantDetail: "too many requests queued"},
		{name: "a refused write says so", err: errcode.New(errcode.StoreWriteFailed, "the change could not be stored"),
			wantStatus: http.StatusInternalServerError, wantCode: errcode.StoreWriteFailed, wantDetail: "the change could not be stored"},
		{name: "an error of no code is internal, its text kept in the daemon", err: errors.New("secret path /var/x"),
			wantStatus: http.StatusInternalServerError, wantCode: errcode.Internal, wantDetail: "internal error; see the daemon log"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeSessions{res: tc.res, err: tc.err}
			e, err := server.New(server.Config{Sessions: fake, Token: testToken, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("server: %v", err)
			}
			srv := httptest.NewServer(e)
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/session/s1/cancel", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("cancel: %v", err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("decode the body: %v", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got status %d (%v), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if fake.asked == nil || fake.asked[0] != "s1" || len(fake.asked) != 1 {
				t.Errorf("the core was asked to cancel %q, want [s1] once", fake.asked)
			}
			if tc.wantCode == "" {
				if got := resp.Header.Get("Content-Type"); got != "application/json" {
					t.Errorf("got content type %q, want application/json", got)
				}
				if body["cancelled"] != true || body["promptId"] != "p1" {
					t.Errorf("got body %v, want cancelled true and promptId p1", body)
				}
				return
			}
			if got := resp.Header.Get("Content-Type"); got != "application/problem+json" {
				t.Errorf("got content type %q, want application/problem+json", got)
			}
			if body["code"] != string(tc.wantCode) || body["detail"] != tc.wantDetail || body["status"] != float64(tc.wantStatus) {
				t.Errorf("got problem %v, want code %s, detail %q, status %d", body, tc.wantCode, tc.wantDetail, tc.wantStatus)
			}
		})
	}
}
