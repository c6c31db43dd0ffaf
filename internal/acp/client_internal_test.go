package acp

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/workspace"
)

// The confinement, limits and file types themselves are tested in
// internal/workspace; this checks what the agent receives.

func TestFileErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantCode   int
		wantReason string
	}{
		{"outside is the agent's mistake", &workspace.FileError{Kind: workspace.FileOutside, Path: "/x", Message: "/x is outside"}, -32602, "outside_workspace"},
		{"not regular", &workspace.FileError{Kind: workspace.FileNotRegular, Path: "/x", Message: "/x is a named pipe"}, -32602, "not_regular"},
		{"too large carries size and limit", &workspace.FileError{Kind: workspace.FileTooLarge, Path: "/x", Message: "/x is 9 bytes", Size: 9, Limit: 4}, -32602, "too_large"},
		{"hard linked", &workspace.FileError{Kind: workspace.FileHardLinked, Path: "/x", Message: "refusing"}, -32602, "hard_linked"},
		{"busy is the daemon's", &workspace.FileError{Kind: workspace.FileBusy, Path: "/x", Message: "too many"}, -32603, "busy"},
		{"timeout", &workspace.FileError{Kind: workspace.FileTimeout, Path: "/x", Message: "timed out"}, -32603, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var re *sdk.RequestError
			if !errors.As(fileError(tt.err), &re) {
				t.Fatalf("fileError(%v): got %T, want *RequestError", tt.err, fileError(tt.err))
			}
			data, _ := re.Data.(map[string]any)
			if re.Code != tt.wantCode || data["reason"] != tt.wantReason || re.Message != tt.err.Error() {
				t.Errorf("got code %d reason %v message %q, want %d %q %q", re.Code, data["reason"], re.Message, tt.wantCode, tt.wantReason, tt.err.Error())
			}
			if tt.wantReason == "too_large" && (data["size"] != int64(9) || data["limit"] != int64(4)) {
				t.Errorf("too_large data: got %v, want size 9 and limit 4", data)
			}
		})
	}
	if err := fileError(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: got %v, want context.Canceled (the SDK answers -32800)", err)
	}
}

func TestNoRootOffersNoFS(t *testing.T) {
	c := &client{}
	_, rerr := c.ReadTextFile(context.Background(), sdk.ReadTextFileRequest{Path: "/x"})
	_, werr := c.WriteTextFile(context.Background(), sdk.WriteTextFileRequest{Path: "/x"})
	for _, err := range []error{rerr, werr} {
		var re *sdk.RequestError
		if !errors.As(err, &re) || re.Code != -32601 || !strings.Contains(Message(err), "fs/") {
			t.Errorf("fs without a root: got %v, want -32601 method not found", err)
		}
	}
}
