package edge_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and localhost and its key,
// and returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "tetherd test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestListenAddressAndTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
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
