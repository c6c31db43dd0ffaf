package cluster_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// nginxBin is Debian's nginx (.ci/run installs it).
const nginxBin = "/usr/sbin/nginx"

// balancer is an nginx in front of the cluster's nodes, configured as
// docs/scale-out.md says (nginxFromDocs): TLS, round robin, streams
// unbuffered, WebSockets upgraded, a node that cannot be reached skipped.
type balancer struct {
	addr string
	cmd  *exec.Cmd
	logs *testbin.LogBuffer
}

// URL is the balancer's base URL.
func (b *balancer) URL() string { return "https://" + b.addr }

// balancerHost is the name clients reach the balancer by, as the docs
// name it: nginx passes it on, and the nodes allow it (--allowed-hosts).
const balancerHost = "tether.example.com"

// nginxFromDocs is the nginx configuration of docs/scale-out.md as
// written, with only the upstream servers' addresses, the listen address
// and the certificate's paths replaced, inside what nginx needs to run
// as a test's process (its pid and temporary files in dir).
func nginxFromDocs(t *testing.T, dir, listen string, upstreams []string, cert, key string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale-out.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```nginx\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/scale-out.md has no nginx block")
	}
	servers := regexp.MustCompile(`(?m)^(\s*server )10\.0\.0\.\d+:7777( .*;)$`)
	if n := len(servers.FindAllString(block, -1)); n != len(upstreams) {
		t.Fatalf("docs/scale-out.md's upstream has %d servers, the test %d nodes", n, len(upstreams))
	}
	i := 0
	block = servers.ReplaceAllStringFunc(block, func(line string) string {
		m := servers.FindStringSubmatch(line)
		i++
		return m[1] + upstreams[i-1] + m[2]
	})
	for old, new := range map[string]string{
		"listen 443 ssl;":               "listen " + listen + " ssl;",
		"/etc/tether/tls/fullchain.pem": cert,
		"/etc/tether/tls/privkey.pem":   key,
	} {
		if strings.Count(block, old) != 1 {
			t.Fatalf("docs/scale-out.md's nginx block has no %q to replace", old)
		}
		block = strings.Replace(block, old, new, 1)
	}
	return fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
%[2]s}
`, dir, block)
}

// toBalancer sends the tests' requests to the balancer as its clients
// would: by its name (Host), trusting its certificate.
type toBalancer struct {
	addr string
	next http.RoundTripper
}

func (b toBalancer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == b.addr {
		r = r.Clone(r.Context())
		r.Host = balancerHost
	}
	return b.next.RoundTrip(r)
}

// startBalancer runs nginx in front of nodes.
func (c *cluster) startBalancer(nodes ...*node) *balancer {
	c.t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		if os.Getenv("CI") == "true" {
			c.t.Fatalf("%s is missing: .ci/run installs nginx", nginxBin)
		}
		c.t.Skipf("needs nginx (%s): apt-get install -y nginx", nginxBin)
	}
	dir := filepath.Join(c.dir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	var ups []string
	for _, n := range nodes {
		ups = append(ups, n.addr)
	}
	b := &balancer{addr: testbin.FreeAddr(c.t), logs: &testbin.LogBuffer{}}
	cert, key, pool := testbin.SelfSigned(c.t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxFromDocs(c.t, dir, b.addr, ups, cert, key)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	prev := http.DefaultClient.Transport
	http.DefaultClient.Transport = toBalancer{addr: b.addr, next: tr}
	c.t.Cleanup(func() { http.DefaultClient.Transport = prev })
	b.cmd = exec.Command(nginxBin, "-p", dir, "-c", conf)
	b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
	if err := b.cmd.Start(); err != nil {
		c.t.Fatalf("start nginx: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	c.t.Cleanup(func() {
		_ = b.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
		}
		if c.t.Failed() {
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			c.t.Logf("--- nginx ---\n%s%s", b.logs.String(), errLog)
		}
	})
	c.waitFor("nginx to serve", func() bool {
		r, err := http.Get(b.URL() + "/health")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	return b
}
