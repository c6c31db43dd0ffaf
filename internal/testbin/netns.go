package testbin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
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
