package executor

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string // path of its PEM file
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := mustKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: path}
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// leaf issues a host certificate for tether-host and 127.0.0.1; it
// returns the server's certificate and its pin.
func (ca *testCA) leaf(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key := mustKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "tether-host"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"tether-host"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, hex.EncodeToString(sum[:])
}

// tlsServer accepts TLS connections on 127.0.0.1 and completes their
// handshakes until the test ends.
func tlsServer(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func TestDialTLS(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	cert, pin := ca.leaf(t)
	_, otherPin := other.leaf(t)
	addr := tlsServer(t, cert)
	colons := strings.ToUpper(pin[:2] + ":" + pin[2:])
	cases := []struct {
		name    string
		cfg     TLSConfig
		wantErr string // "" for success
	}{
		{"CA", TLSConfig{CAFile: ca.pem}, ""},
		{"CA with a server name", TLSConfig{CAFile: ca.pem, ServerName: "tether-host"}, ""},
		{"pin", TLSConfig{PinSHA256: pin}, ""},
		{"pin with colons and capitals", TLSConfig{PinSHA256: colons}, ""},
		{"CA and pin", TLSConfig{CAFile: ca.pem, PinSHA256: pin}, ""},
		{"another CA", TLSConfig{CAFile: other.pem}, "certificate signed by unknown authority"},
		{"another pin", TLSConfig{PinSHA256: otherPin}, "not the pinned " + otherPin},
		{"the right CA and another pin", TLSConfig{CAFile: ca.pem, PinSHA256: otherPin}, "not the pinned"},
		{"a name the certificate lacks", TLSConfig{CAFile: ca.pem, ServerName: "elsewhere"}, "is valid for tether-host, not elsewhere"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dial, err := DialTLS(addr, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := dial(ctxT(t))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want a connection", err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatalf("got a connection, want an error mentioning %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("got %v, want an error naming %s and mentioning %q", err, addr, tc.wantErr)
			}
			if got := errcode.CodeOf(err); got != errcode.HostCertificateRejected {
				t.Fatalf("code: got %s, want %s", got, errcode.HostCertificateRejected)
			}
		})
	}
}

// TestDialTLSNetworkError: a host that cannot be reached is not a
// rejected certificate (retrying may mend it).
func TestDialTLSNetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	dial, err := DialTLS(addr, TLSConfig{PinSHA256: strings.Repeat("a", 64)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(ctxT(t)); err == nil || errcode.Is(err, errcode.HostCertificateRejected) {
		t.Fatalf("got %v, want a connection error that is not %s", err, errcode.HostCertificateRejected)
	}
}

func TestDialTLSConfigErrors(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, addr string
		cfg        TLSConfig
		want       string
	}{
		{"nothing to verify with", "h:1", TLSConfig{}, "needs a CA file or a certificate pin"},
		{"short pin", "h:1", TLSConfig{PinSHA256: "abcd"}, "64 hex digits"},
		{"pin not hex", "h:1", TLSConfig{PinSHA256: strings.Repeat("z", 64)}, "64 hex digits"},
		{"missing CA file", "h:1", TLSConfig{CAFile: "/nonexistent/ca.pem"}, "read CA file"},
		{"CA file without a certificate", "h:1", TLSConfig{CAFile: notPEM}, "holds no PEM certificate"},
		{"no port", "h", TLSConfig{PinSHA256: strings.Repeat("a", 64)}, "missing port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DialTLS(tc.addr, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// newTLSFakeHost is a fake host serving TLS with cert on 127.0.0.1.
func newTLSFakeHost(t *testing.T, cert tls.Certificate) *fakeHost {
	t.Helper()
	return newFakeHost(t, func(f *fakeHost) {
		f.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	})
}

func dialPinned(t *testing.T, addr, pin string) Dialer {
	t.Helper()
	dial, err := DialTLS(addr, TLSConfig{PinSHA256: pin})
	if err != nil {
		t.Fatal(err)
	}
	return dial
}

// TestHostOverTLS runs the protocol over TLS with a pinned certificate.
func TestHostOverTLS(t *testing.T) {
	cert, pin := newTestCA(t, "ca").leaf(t)
	f := newTLSFakeHost(t, cert)
	h := newTestHost(t, f, func(c *HostConfig) { c.Dial = dialPinned(t, f.path, pin) })
	a, err := h.Start(ctxT(t), "s1", hostproto.StartPayload{ProfileID: "demo"}, newRecHandler(true))
	if err != nil {
		t.Fatal(err)
	}
	if a.Capabilities().AgentName != "fake-agent" {
		t.Fatalf("capabilities: got %+v", a.Capabilities())
	}
}

// TestHostWrongCertificate: a host whose certificate is not the pinned
// one is never spoken to, Info says why, and a Start there fails at once.
func TestHostWrongCertificate(t *testing.T) {
	cert, _ := newTestCA(t, "ca").leaf(t)
	_, otherPin := newTestCA(t, "other").leaf(t)
	f := newTLSFakeHost(t, cert)
	h := newTestHost(t, f, func(c *HostConfig) { c.Dial = dialPinned(t, f.path, otherPin) })
	info := waitInfo(t, h, "the certificate refused", func(i HostInfo) bool {
		return i.LastError != nil && strings.Contains(i.LastError.Error(), "not the pinned "+otherPin)
	})
	if info.State != StateReconnecting {
		t.Fatalf("state: got %s, want %s", info.State, StateReconnecting)
	}
	checkStartRefused(t, h, "s1", errcode.HostCertificateRejected)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nconns != 0 {
		t.Fatalf("the host saw %d handshakes, want none", f.nconns)
	}
}
