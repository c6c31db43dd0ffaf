package testbin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace with a veth pair to the test's own: the
// far end, inside, has IP; the near end, outside, has PeerIP. Tests use it
// for what crosses a network: a remote host, a node cut off from its
// database.
type Netns struct {
	t          testing.TB
	Name       string
	near, far  string // interface names
	IP, PeerIP string
}

// NewNetns makes a namespace for tb, removed (with its veth pair) at the
// end. It skips tb where namespaces cannot be made: not root, or no ip(8).
func NewNetns(tb testing.TB) *Netns {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to make a network namespace (ip netns add); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("needs iproute2's ip to make a network namespace: " + err.Error())
	}
	// Names unique per test (interface names have 15 bytes at most), an
	// address block unlikely to be routed on the machine already.
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	tag := hex.EncodeToString(id)
	sub := mrand.IntN(256)
	quad := mrand.IntN(64) * 4
	n := &Netns{t: tb, Name: "tether-" + tag, near: "tt" + tag + "n", far: "tt" + tag + "f",
		IP: fmt.Sprintf("10.213.%d.%d", sub, quad+2), PeerIP: fmt.Sprintf("10.213.%d.%d", sub, quad+1)}
	run := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", n.Name)
	tb.Cleanup(func() {
		// Deleting the near end deletes the pair.
		_ = exec.Command("ip", "link", "del", n.near).Run()
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v\n%s", n.Name, err, out)
		}
	})
	run("link", "add", n.near, "type", "veth", "peer", "name", n.far)
	run("link", "set", n.far, "netns", n.Name)
	run("addr", "add", n.PeerIP+"/30", "dev", n.near)
	run("link", "set", n.near, "up")
	run("netns", "exec", n.Name, "ip", "addr", "add", n.IP+"/30", "dev", n.far)
	run("netns", "exec", n.Name, "ip", "link", "set", n.far, "up")
	run("netns", "exec", n.Name, "ip", "link", "set", "lo", "up")
	return n
}

// SetLink sets the far end of the veth pair (inside the namespace) up or
// down. Down is a cable cut: the near end loses its carrier and drops
// what is sent to the namespace, whose routes stay (so nothing else
// answers for its address), and neither side's sockets hear of it.
func (n *Netns) SetLink(up bool) {
	n.t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	if out, err := exec.Command("ip", "netns", "exec", n.Name, "ip", "link", "set", n.far, state).CombinedOutput(); err != nil {
		n.t.Fatalf("ip link set %s %s in %s: %v\n%s", n.far, state, n.Name, err, out)
	}
}

// Listen opens a TCP listener on addr inside the namespace (e.g.
// "127.0.0.1:0", its own loopback): what runs in the namespace reaches it
// whether or not the veth link is up. The socket is made on a thread that
// enters the namespace and is never used again (a goroutine that ends
// locked to its thread takes the thread with it), so no other goroutine
// of the test runs in the namespace.
func (n *Netns) Listen(addr string) net.Listener {
	n.t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open("/run/netns/" + n.Name)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", n.Name, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		n.t.Fatalf("listen on %s in %s: %v", addr, n.Name, r.err)
	}
	return r.ln
}
