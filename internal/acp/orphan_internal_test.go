package acp

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunsAgent(t *testing.T) {
	demo := []string{"demo-agent", "--state-dir", "/d/state"}
	for _, tt := range []struct {
		name    string
		argv    []string
		command string
		args    []string
		want    bool
	}{
		{"the agent as launched", []string{"/bin/tetherd", "demo-agent", "--state-dir", "/d/state"}, "/bin/tetherd", demo, true},
		{"with a resume's arguments after its own", []string{"/bin/tetherd", "demo-agent", "--state-dir", "/d/state", "--resume", "x"}, "/bin/tetherd", demo, true},
		{"launched from PATH by name", []string{"/usr/local/bin/agent", "acp"}, "agent", []string{"acp"}, true},
		{"the same binary running something else: a detached host", []string{"/bin/tetherd", "host", "--data-dir", "/d/host"}, "/bin/tetherd", demo, false},
		{"the same binary as a daemon", []string{"/bin/tetherd", "serve"}, "/bin/tetherd", demo, false},
		{"other arguments", []string{"/bin/tetherd", "demo-agent", "--state-dir", "/e/state"}, "/bin/tetherd", demo, false},
		{"a script behind its interpreter", []string{"node", "/n/bin/claude-agent-acp", "--x"}, "/n/bin/claude-agent-acp", []string{"--x"}, true},
		{"the interpreter running another script", []string{"node", "/n/bin/other"}, "/n/bin/claude-agent-acp", nil, false},
		{"in its sandbox", []string{"bwrap", "--args", "3", "--", "/bin/tetherd", "sandbox-init", "--", "/bin/tetherd", "demo-agent", "--state-dir", "/d/state"}, "/bin/tetherd", demo, true},
		{"a sandbox running another agent", []string{"bwrap", "--args", "3", "--", "/bin/tetherd", "sandbox-init", "--", "/bin/agent"}, "/bin/tetherd", demo, false},
		{"an empty command line (a zombie)", []string{""}, "/bin/tetherd", demo, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := runsAgent(tt.argv, tt.command, tt.args); got != tt.want {
				t.Errorf("runsAgent(%q, %q, %q): got %v, want %v", tt.argv, tt.command, tt.args, got, tt.want)
			}
		})
	}
}

func TestStopOrphan(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pid := cmd.Process.Pid
	// Start returns once exec has begun; the new image's arguments reach
	// /proc a moment later (on a loaded machine, after the first check).
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(b), "sleep\x00") {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the child's command line never showed sleep")
		}
	}
	for _, tt := range []struct {
		name    string
		pid     int
		command string
		args    []string
		want    bool
	}{
		{"the agent's command line", pid, "sleep", []string{"30"}, true},
		{"the command by its path", pid, "/usr/bin/sleep", []string{"30"}, true},
		{"other arguments", pid, "sleep", []string{"31"}, false},
		{"another command", pid, "node", nil, false},
		{"no command", pid, "", nil, false},
		{"a process that leads no group of its own", syscall.Getpid(), "go", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := isAgentProcess(tt.pid, tt.command, tt.args); got != tt.want {
				t.Errorf("isAgentProcess(%d, %q, %q): got %v, want %v", tt.pid, tt.command, tt.args, got, tt.want)
			}
		})
	}
	StopOrphan(pid, "sleep", []string{"31"}) // not its command line: left alone
	select {
	case err := <-done:
		t.Fatalf("a process of another command line was stopped: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	StopOrphan(pid, "sleep", []string{"30"})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan still runs 10 s after StopOrphan")
	}
}
