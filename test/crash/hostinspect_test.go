package crash_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/host"
)

// TestDetachedHostHidesItsSecrets (issue 31): an agent that runs without
// a sandbox runs as tetherd's user. It reads any process's command line
// (/proc/<pid>/cmdline), its host's as its parent's: there the host names
// neither its token file, nor its socket, nor its directory, nor the
// daemon's. And it cannot read tetherd's nor the host's environment
// (/proc/<pid>/environ, which holds TETHER_TOKEN when the daemon's
// environment sets it, and the host's paths): both are non-dumpable, so
// the kernel lets no process of their user without CAP_SYS_PTRACE look
// inside them (the same check guards /proc/<pid>/mem and ptrace).
//
// The reader is a process of the daemon's user, as an agent is. Root
// reads every process (CAP_SYS_PTRACE), so when the test runs as root the
// daemon, its host and the reader all run as nobody. The controls are
// dumpable processes of that user, which the same reader reads (among
// them tetherd's demo agent, the one tetherd that stays dumpable): a
// refusal is the non-dumpable flag's, and the daemon and host are checked
// to run as that user, so that it is not a matter of users either.
func TestDetachedHostHidesItsSecrets(t *testing.T) {
	cred, root := userOfTheTest(t)
	data, cwd, home := filepath.Join(root, "data"), filepath.Join(root, "cwd"), filepath.Join(root, "home")
	for _, d := range []string{data, cwd, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w := newWorldAt(t, tetherdFor(t, root), data, profile{id: "demo"})
	w.cred = cred
	w.env = append(w.env, "HOME="+home)
	chownTree(t, root, cred)
	w.startHosted()
	sid := w.createSessionIn("demo", "", cwd) // starts the host
	// The host is up once its agent runs (its start-up, before it turned
	// itself non-dumpable, is not what is checked here).
	w.waitFor("the agent to run", func() bool { return w.executor(sid)["pid"] != nil })

	// Found as the daemon says it started it (any version does), not by
	// host.lock, which the host is checked to write.
	var started []string
	w.waitFor("the daemon to log the host it started", func() bool {
		started = regexp.MustCompile(`msg="started executor host" pid=(\d+)`).FindStringSubmatch(w.daemon.logs.String())
		return started != nil
	})
	hostPID, _ := strconv.Atoi(started[1])
	hostDir := filepath.Join(w.dir, "host")
	if got := host.Running(hostDir); got != hostPID {
		t.Errorf("host.Running(%s): got %d, want the host the daemon started, %d", hostDir, got, hostPID)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(hostPID) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.ReplaceAll(string(cmdline), "\x00", " ")
	for _, p := range []struct{ what, path string }{
		{"token file", filepath.Join(hostDir, "token")},
		{"socket", filepath.Join(hostDir, "host.sock")},
		{"directory", hostDir},
		{"daemon's data dir", w.dir},
	} {
		if strings.Contains(args, p.path) {
			t.Errorf("the host's command line %q names its %s %s", args, p.what, p.path)
		}
	}

	// Controls: a program of the user, and the demo agent, the one tetherd
	// that stays dumpable (it stands for an agent).
	var controls []*exec.Cmd
	for _, argv := range [][]string{{"sleep", "600"}, {w.bin, "demo-agent"}} {
		c := exec.Command(argv[0], argv[1:]...)
		if cred != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if _, err := c.StdinPipe(); err != nil { // the agent runs until its stdin closes
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
		controls = append(controls, c)
	}
	uid := os.Getuid()
	if cred != nil {
		uid = int(cred.Uid)
	}
	for _, tc := range []struct {
		name     string
		pid      int
		readable bool
	}{
		{"a program of the same user, dumpable", controls[0].Process.Pid, true},
		{"tetherd demo-agent, dumpable", controls[1].Process.Pid, true},
		{"tetherd serve", w.daemon.pid(), false},
		{"tetherd host", hostPID, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uidOf(t, tc.pid); got != uid {
				t.Fatalf("process %d runs as uid %d, want %d (the reader's)", tc.pid, got, uid)
			}
			path := "/proc/" + strconv.Itoa(tc.pid) + "/environ"
			got, err := readAs(cred, path)
			switch {
			case tc.readable && err != nil:
				t.Fatalf("read %s as its user: %v, want its environment", path, err)
			case tc.readable && !bytes.Contains(got, []byte("PATH=")):
				t.Fatalf("read %s as its user: got %q, want its environment", path, got)
			case !tc.readable && err == nil:
				t.Fatalf("read %s as its user: got %d bytes, want permission denied (non-dumpable)", path, len(got))
			case !tc.readable && !strings.Contains(err.Error(), "Permission denied"):
				t.Fatalf("read %s as its user: got %v, want permission denied (non-dumpable)", path, err)
			}
		})
	}
}

// uidOf reads a process's real uid from /proc/<pid>/status, which
// anyone may read, dumpable or not.
func uidOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("/proc/%d/status: %q: %v", pid, l, err)
			}
			return uid
		}
	}
	t.Fatalf("/proc/%d/status has no Uid line:\n%s", pid, b)
	return 0
}

// userOfTheTest returns who the daemon and the reader run as (nil: the
// test's own user; nobody when that is root) and a fresh directory that
// user can reach, removed when the test ends.
func userOfTheTest(t *testing.T) (*syscall.Credential, string) {
	t.Helper()
	root, err := os.MkdirTemp("", "tether-inspect-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if os.Geteuid() != 0 {
		return nil, root
	}
	// Others may pass through, not list: the directories in it are nobody's.
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534}, root
}

// tetherdFor is the tetherd executable, copied into dir (mode 0755): the
// test's may sit in a directory only its user can enter.
func tetherdFor(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.Open(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, "tetherd")
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// chownTree gives what is in dir (not dir itself) to cred's user; nothing
// when cred is nil.
func chownTree(t *testing.T, dir string, cred *syscall.Credential) {
	t.Helper()
	if cred == nil {
		return
	}
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		return os.Lchown(path, int(cred.Uid), int(cred.Gid))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readAs reads a file in a process of cred's user (nil: the test's), as
// an agent of that user would: cat, whose error says why it could not.
func readAs(cred *syscall.Credential, path string) ([]byte, error) {
	cmd := exec.Command("cat", path)
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
