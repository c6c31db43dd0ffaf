package hosted

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

func TestErrorCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want errcode.Code
	}{
		{"a refusal keeps its code", fmt.Errorf("handshake: %w", errcode.New(errcode.HostUnauthorized, "wrong token")), errcode.HostUnauthorized},
		{"a rejected certificate", fmt.Errorf("connect: %w", errcode.New(errcode.HostCertificateRejected, "TLS")), errcode.HostCertificateRejected},
		{"a network error is the host unavailable", errors.New("connect: dial tcp: connection refused"), errcode.ExecutorUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorCode(tc.err); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
