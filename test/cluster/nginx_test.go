package cluster_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// nginxBin is Debian's nginx (.ci/run installs it).
const nginxBin = "/usr/sbin/nginx"

// balancer is an nginx in front of the cluster's nodes, round robin, the
// way docs/scale-out.md configures it: streams unbuffered, WebSockets
// upgraded, a dead node's requests retried on the next one.
type balancer struct {
	addr string
	cmd  *exec.Cmd
	logs *testbin.LogBuffer
}

// URL is the balancer's base URL.
func (b *balancer) URL() string { return "http://" + b.addr }

// nginxConf renders the balancer's configuration for upstream addresses.
func nginxConf(dir, listen string, upstreams []string) string {
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s max_fails=1 fail_timeout=2s;\n", u)
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
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  upstream tether {
%[3]s  }
  server {
    listen %[2]s;
    location / {
      proxy_pass http://tether;
      proxy_http_version 1.1;
      proxy_set_header Host $host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout http_502 http_503;
      proxy_next_upstream_tries 3;
    }
  }
}
`, dir, listen, servers.String())
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
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConf(dir, b.addr, ups)), 0o644); err != nil {
		c.t.Fatal(err)
	}
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
