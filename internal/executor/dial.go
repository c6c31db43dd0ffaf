package executor

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/tether/tether/internal/errcode"
)

// MaxSocketPath is the longest path a unix socket may have on this system
// (sun_path less its terminating NUL: 107 bytes on Linux, 103 on macOS).
var MaxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// CheckSocketPath refuses a unix socket path longer than MaxSocketPath:
// the system refuses to bind or connect to it with a bare EINVAL
// ("invalid argument"), which says nothing of the path's length. A
// relative path made absolute (a --data-dir given from a deep directory)
// grows past it easily.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("unix socket path %s is %d bytes, longer than the %d this system allows", path, len(path), MaxSocketPath)
	}
	return nil
}

// DialUnix reaches a host on a unix socket (a detached host).
func DialUnix(path string) Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}

// TLSConfig says how the daemon verifies a remote host's certificate: by a
// CA (CAFile, PEM) or by pinning the certificate itself (PinSHA256, the
// hex SHA-256 of its DER; colons and case are ignored). With both, both
// must hold.
type TLSConfig struct {
	CAFile    string
	PinSHA256 string
	// ServerName is the name the certificate must carry in CA mode
	// (default: the host part of the address).
	ServerName string
}

// DialTLS reaches a remote host over TCP with TLS 1.3. In pin mode the
// usual chain check is skipped and the host's leaf certificate must hash
// to the pin; in CA mode the chain must lead to the CA and name
// ServerName. It fails at once on a configuration that cannot work (no CA
// and no pin, an unreadable CA file, a malformed pin).
func DialTLS(addr string, t TLSConfig) (Dialer, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("executor host address %q: %w", addr, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: t.ServerName}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	var pin []byte
	if t.PinSHA256 != "" {
		pin, err = hex.DecodeString(strings.ToLower(strings.ReplaceAll(t.PinSHA256, ":", "")))
		if err != nil || len(pin) != sha256.Size {
			return nil, fmt.Errorf("executor host %s: pin_sha256 must be the 64 hex digits of a SHA-256", addr)
		}
	}
	switch {
	case t.CAFile != "":
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("executor host %s: read CA file: %w", addr, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("executor host %s: CA file %s holds no PEM certificate", addr, t.CAFile)
		}
		cfg.RootCAs = pool
	case pin != nil:
		// The pin is the whole check: a self-signed host certificate has no
		// chain to verify. VerifyPeerCertificate still runs.
		cfg.InsecureSkipVerify = true
	default:
		return nil, fmt.Errorf("executor host %s: TLS needs a CA file or a certificate pin", addr)
	}
	if pin != nil {
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("executor host presented no certificate")
			}
			got := sha256.Sum256(raw[0])
			if subtle.ConstantTimeCompare(got[:], pin) != 1 {
				return pinMismatch{got: got[:], want: pin}
			}
			return nil
		}
	}
	return func(ctx context.Context) (net.Conn, error) {
		d := tls.Dialer{Config: cfg}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if certificateRejected(err) {
				return nil, errcode.Wrap(errcode.HostCertificateRejected, err, "TLS to %s: host certificate rejected", addr)
			}
			return nil, fmt.Errorf("TLS to %s: %w", addr, err)
		}
		return c, nil
	}, nil
}

// pinMismatch is the error of a host certificate that is not the pinned
// one.
type pinMismatch struct{ got, want []byte }

func (e pinMismatch) Error() string {
	return fmt.Sprintf("executor host certificate has SHA-256 %x, not the pinned %x", e.got, e.want)
}

// certificateRejected reports whether a TLS dial failed because the
// daemon refused the host's certificate (not the pinned one, not issued by
// the CA, or for another name): a configuration error that retrying does
// not mend, unlike a network error.
func certificateRejected(err error) bool {
	var pm pinMismatch
	var ve *tls.CertificateVerificationError
	return errors.As(err, &pm) || errors.As(err, &ve)
}
