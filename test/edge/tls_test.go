package edge_test

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

func TestListenAddressAndTLS(t *testing.T) {
	certFile, keyFile, pool := testbin.SelfSigned(t)
	tlsClient := func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	tlsArgs := []string{"--tls-cert", certFile, "--tls-key", keyFile}
	const warning = "other machines can reach"
	cases := []struct {
		name     string
		listen   string
		tls      bool
		args     []string
		wantWarn bool
	}{
		{"https on loopback", "", true, tlsArgs, false},
		{"https on every interface", "0.0.0.0", true, tlsArgs, true},
		{"plain http on every interface when asked", "0.0.0.0", false, []string{"--insecure-http"}, true},
		{"plain http on loopback", "", false, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := daemonOptions{listen: tc.listen, args: tc.args}
			if tc.tls {
				o.client, o.scheme = tlsClient(), "https"
			}
			d := startDaemon(t, o) // waits for /health over the scheme
			d.mustWork()
			if got := strings.Contains(d.logs.String(), warning); got != tc.wantWarn {
				t.Errorf("warning %q in the log: got %v, want %v\n%s", warning, got, tc.wantWarn, d.logs.String())
			}
			if !strings.Contains(d.logs.String(), "listening on "+d.base) {
				t.Errorf("the log does not say it listens on %s:\n%s", d.base, d.logs.String())
			}
			if tc.tls {
				// Plain HTTP to the TLS port is not served.
				resp, err := http.Get("http://" + d.addr + "/health")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						t.Errorf("plain HTTP to the HTTPS listener: got 200")
					}
				}
			}
		})
	}
}
