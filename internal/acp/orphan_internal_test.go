package acp

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

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
	for _, tt := range []struct {
		name    string
		pid     int
		command string
		want    bool
	}{
		{"the agent's command", pid, "sleep", true},
		{"the command by its path", pid, "/usr/bin/sleep", true},
		{"another command", pid, "node", false},
		{"no command", pid, "", false},
		{"a process that leads no group of its own", syscall.Getpid(), "go", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := isAgentProcess(tt.pid, tt.command); got != tt.want {
				t.Errorf("isAgentProcess(%d, %q): got %v, want %v", tt.pid, tt.command, got, tt.want)
			}
		})
	}
	StopOrphan(pid, "node") // not its command: left alone
	select {
	case err := <-done:
		t.Fatalf("a process of another command was stopped: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	StopOrphan(pid, "sleep")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan still runs 10 s after StopOrphan")
	}
}
