package executor

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

// fakeHostEnv makes the test binary play `tetherd host` (the Detached
// tests start it as the host executable).
const fakeHostEnv = "EXECUTOR_TEST_FAKE_HOST"

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(fakeHostEnv) == "1" {
		os.Exit(fakeHostMain(os.Args[1:]))
	}
	testbin.RunLeakChecked(m)
}

// fakeHostMain is the fake host as a process: it takes the flags and the
// environment Detached passes, records each start in <data-dir>/starts
// (pid, the extra flag, the agents dir, whether TETHER_TOKEN is set),
// serves a fakeHost on the socket with the token file's token and its pid
// as host id, and runs until SIGTERM.
func fakeHostMain(args []string) int {
	if len(args) == 0 || args[0] != "host" {
		fmt.Fprintln(os.Stderr, "fake host: want the host subcommand, got", args)
		return 2
	}
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	marker := fs.String("marker", "", "an extra flag, to see Args passed")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	dataDir, socket, tokenFile, agentsDir := os.Getenv(EnvHostDataDir), os.Getenv(EnvHostSocket),
		os.Getenv(EnvHostTokenFile), os.Getenv(EnvHostAgentsDir)
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake host:", err)
		return 1
	}
	// The daemon's own settings are not the host's (Detached.hostEnv).
	daemonToken := "without-TETHER_TOKEN"
	if _, ok := os.LookupEnv("TETHER_TOKEN"); ok {
		daemonToken = "with-TETHER_TOKEN"
	}
	line := fmt.Sprintf("%d %s %s %s\n", os.Getpid(), *marker, agentsDir, daemonToken)
	sf, err := os.OpenFile(filepath.Join(dataDir, "starts"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake host:", err)
		return 1
	}
	_, _ = sf.WriteString(line)
	_ = sf.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("fake host starting on", socket) // before the socket exists: the log has it once a dial succeeds
	f := &fakeHost{path: socket, token: strings.TrimSpace(string(tok)), hostID: strconv.Itoa(os.Getpid())}
	if err := f.start(); err != nil {
		fmt.Fprintln(os.Stderr, "fake host:", err)
		return 1
	}
	<-sig
	f.close()
	return 0
}
