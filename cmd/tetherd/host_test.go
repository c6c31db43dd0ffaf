package main_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/testbin"
)

// runHost starts `tetherd host` with args; a clean stop ends it.
func runHost(t *testing.T, args ...string) (*exec.Cmd, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cmd := exec.Command(binary(t), append([]string{"host"}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDaemon(cmd) })
	return cmd, logs
}

// dialHost retries dial until the host takes the connection.
func dialHost(t *testing.T, logs *logBuffer, dial func() (net.Conn, error)) net.Conn {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		nc, err := dial()
		if err == nil {
			t.Cleanup(func() { _ = nc.Close() })
			return nc
		}
		if time.Now().After(deadline) {
			t.Fatalf("tetherd host did not listen: %v\n%s", err, logs.String())
		}
	}
}

func unixDialer(sock string) func() (net.Conn, error) {
	return func() (net.Conn, error) { return net.Dial("unix", sock) }
}

// TestHostSubcommand runs `tetherd host` on a unix socket and drives one
// prompt of the demo agent through it, as a daemon would; SIGTERM then
// stops it cleanly.
func TestHostSubcommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host") // made by the host
	sock := testbin.SocketPath(t)
	cmd, logs := runHost(t, "--data-dir", dir, "--socket", sock)
	nc := dialHost(t, logs, unixDialer(sock))
	for _, p := range []string{dir, sock, filepath.Join(dir, "token")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %o, want no access for others", p, perm)
		}
	}
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.TrimSpace(string(token))) != 64 {
		t.Errorf("generated token %q: want 32 bytes in hex", token)
	}
	conn, _, err := hostproto.Client(context.Background(), nc, hostproto.ClientConfig{Token: strings.TrimSpace(string(token)), DaemonID: "test"})
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, logs.String())
	}
	var chunks []string
	var lines acp.UpdateDecoder
	call := func(kind hostproto.CommandKind, payload any, result any) {
		t.Helper()
		b, _ := json.Marshal(payload)
		if err := conn.Send(&hostproto.Command{ID: string(kind), Kind: kind, SessionID: "s1", Payload: b}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := conn.Recv()
			if err != nil {
				t.Fatalf("%s: %v\n%s", kind, err, logs.String())
			}
			switch m := m.(type) {
			case *hostproto.Ping:
				_ = conn.Send(&hostproto.Pong{Nonce: m.Nonce})
			case *hostproto.Record:
				if m.Kind != hostproto.RecordACPUpdate {
					t.Fatalf("record %d of kind %s, want the agent's lines (acp_update) on version %d", m.Offset, m.Kind, hostproto.MaxVersion)
				}
				if u, ok := lines.Decode(m.Payload); ok && u.Kind == acp.UpdateAgentMessage {
					chunks = append(chunks, u.Text)
				}
				_ = conn.Send(&hostproto.Ack{SessionID: m.SessionID, Offset: m.Offset})
			case *hostproto.CommandResult:
				if m.Error != nil {
					t.Fatalf("%s: %s: %s", kind, m.Error.Code, m.Error.Message)
				}
				if err := json.Unmarshal(m.Result, result); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	var start hostproto.StartResult
	call(hostproto.CommandStart, hostproto.StartPayload{ProfileID: "demo", Cwd: t.TempDir()}, &start)
	var opened hostproto.NewResult
	call(hostproto.CommandNew, hostproto.NewPayload{Params: hostproto.SessionParams{Cwd: t.TempDir()}}, &opened)
	blocks, _ := json.Marshal([]map[string]string{{"type": "text", "text": "/echo hello through the host"}})
	var res hostproto.PromptResult
	call(hostproto.CommandPrompt, hostproto.PromptPayload{AcpSessionID: opened.AcpSessionID, Prompt: blocks}, &res)
	if res.StopReason != "end_turn" || strings.Join(chunks, "") != "hello through the host" {
		t.Fatalf("prompt: got %q and chunks %q, want end_turn after the echo", res.StopReason, chunks)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tetherd host after SIGTERM: %v, want exit 0\n%s", err, logs.String())
	}
	if err := syscall.Kill(start.PID, 0); err == nil {
		t.Errorf("agent %d still runs after the host stopped", start.PID)
	}
}

func TestHostRefusesListenWithoutTLS(t *testing.T) {
	out, err := exec.Command(binary(t), "host", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--listen needs --tls-cert and --tls-key") {
		t.Fatalf("got %v: %s; want a refusal naming the TLS flags", err, out)
	}
}

// TestHostOverTLS runs `tetherd host --listen` with a self-signed
// certificate, which a daemon that pins it reaches; one that does not
// trust it is refused by TLS.
func TestHostOverTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testbin.SelfSigned(t)
	addr := freeAddr(t)
	_, logs := runHost(t, "--data-dir", filepath.Join(dir, "host"), "--listen", addr, "--tls-cert", certFile, "--tls-key", keyFile)
	nc := dialHost(t, logs, func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	})
	token, err := os.ReadFile(filepath.Join(dir, "host", "token"))
	if err != nil {
		t.Fatal(err)
	}
	conn, w, err := hostproto.Client(context.Background(), nc, hostproto.ClientConfig{Token: strings.TrimSpace(string(token)), DaemonID: "test"})
	if err != nil {
		t.Fatalf("handshake over TLS: %v\n%s", err, logs.String())
	}
	if w.HostID == "" || w.Version != hostproto.MaxVersion {
		t.Fatalf("welcome: got %+v, want the host's id and version %d", w, hostproto.MaxVersion)
	}
	if err := conn.Send(&hostproto.Command{ID: "st", Kind: hostproto.CommandStatus}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := conn.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*hostproto.CommandResult); ok {
			if r.Error != nil || r.ID != "st" {
				t.Fatalf("status over TLS: got %+v", r)
			}
			break
		}
	}
	if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "localhost"}); err == nil {
		c.Close()
		t.Fatal("a daemon that does not trust the host's certificate got through")
	}
}

// TestHostProtocolVersionsFlag: the hidden --protocol-versions makes the
// host speak other versions (upgrade tests), and a daemon with none in
// common is refused with host_protocol_mismatch.
func TestHostProtocolVersionsFlag(t *testing.T) {
	help, _ := exec.Command(binary(t), "host", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--linger") || strings.Contains(string(help), "protocol-versions") {
		t.Errorf("host --help: want the flags without the hidden --protocol-versions, got:\n%s", help)
	}
	for _, bad := range []string{"2", "3..2", "0..1", "a..b"} {
		if out, err := exec.Command(binary(t), "host", "--data-dir", t.TempDir(), "--protocol-versions", bad).CombinedOutput(); err == nil {
			t.Errorf("--protocol-versions %s: got %s, want a refusal", bad, out)
		}
	}
	dir, sock := filepath.Join(t.TempDir(), "host"), testbin.SocketPath(t)
	_, logs := runHost(t, "--data-dir", dir, "--socket", sock, "--protocol-versions", fmt.Sprintf("%d..%d", hostproto.MaxVersion+1, hostproto.MaxVersion+1))
	nc := dialHost(t, logs, unixDialer(sock))
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostproto.Client(context.Background(), nc, hostproto.ClientConfig{Token: strings.TrimSpace(string(token))}); !errcode.Is(err, errcode.HostProtocolMismatch) {
		t.Fatalf("got %v, want %s", err, errcode.HostProtocolMismatch)
	}
}
