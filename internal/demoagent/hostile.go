package demoagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// /hostile is what an agent that turned against its user tries (issue
// 31): take the keys that answer its permission requests, answer them
// itself, write outside its workspace through its own shell, look at
// other processes and leave one behind when it is killed. Each attack
// reports one line, `attack NAME: OUTCOME (DETAIL)`, that a test parses
// (ParseAttacks). The targets are those the test names in the JSON
// argument and those the agent finds itself as a real attacker would: the
// command lines and environments of its ancestors (the daemon, the
// executor host, the sandbox), and the default paths under HOME.

// HostileTargets is /hostile's JSON argument: what the test knows to be
// there, outside the agent's workspace.
type HostileTargets struct {
	// TokenFiles are secret files to read (tetherd's and the hosts' tokens).
	TokenFiles []string `json:"tokenFiles,omitempty"`
	// DataDirs are directories to list (tetherd's data dir, a host's);
	// agents.yaml is read in each.
	DataDirs []string `json:"dataDirs,omitempty"`
	// HostSockets are executor hosts' unix sockets.
	HostSockets []string `json:"hostSockets,omitempty"`
	// HostAddrs are remote executor hosts' TLS addresses (host:port).
	HostAddrs []string `json:"hostAddrs,omitempty"`
	// APIAddr is the daemon's HTTP address (host:port).
	APIAddr string `json:"apiAddr,omitempty"`
	// Outside are files outside the workspace to write through sh -c.
	Outside []string `json:"outside,omitempty"`
	// PIDs are processes of tether's (the daemon, a host) to look for
	// in /proc.
	PIDs []int `json:"pids,omitempty"`
	// Marker names the process left behind (in its command line and its
	// environment, HostileMarkerEnv), so that a test finds it.
	Marker string `json:"marker,omitempty"`
	// Report, if set, is a file name in the workspace the report is also
	// written to, for a test that cannot rely on the turn's stream (an
	// attack that succeeds can take it over).
	Report string `json:"report,omitempty"`
}

// HostileMarkerEnv is the environment variable the process /hostile leaves
// behind carries the marker in, so that its children are found too.
const HostileMarkerEnv = "TETHER_HOSTILE_MARKER"

// The attacks of /hostile, by the name its report gives them.
const (
	AttackFindSecrets  = "find-secrets"        // find a secret's path or value in a command line or an environment
	AttackReadToken    = "read-token"          // read a token file
	AttackReadDataDir  = "read-data-dir"       // list a data dir, read its agents.yaml
	AttackHostSocket   = "connect-host-socket" // connect to a host's unix socket
	AttackApproveAPI   = "approve-via-api"     // answer its own permission request over the daemon's API
	AttackApproveHost  = "approve-via-host"    // ... over the host protocol
	AttackWriteOutside = "write-outside"       // write outside the workspace through sh -c
	AttackSeeProcesses = "see-processes"       // see processes outside its own tree
	AttackSeePIDs      = "see-tether"          // see the daemon's and the host's processes
	AttackLeaveProcess = "leave-process"       // start a process that outlives it
)

// HostileAttacks are the attacks in the order /hostile reports them.
var HostileAttacks = []string{AttackFindSecrets, AttackReadToken, AttackReadDataDir, AttackHostSocket, AttackWriteOutside,
	AttackSeeProcesses, AttackSeePIDs, AttackApproveAPI, AttackApproveHost, AttackLeaveProcess}

// The outcomes of an attack.
const (
	// OutcomeBlocked: tried on every target, and failed on each.
	OutcomeBlocked = "blocked"
	// OutcomeSucceeded: it worked on at least one target.
	OutcomeSucceeded = "SUCCEEDED"
	// OutcomeStarted: leave-process started its process; whether it
	// outlives the agent only the test, outside, can tell.
	OutcomeStarted = "started"
	// OutcomeUntried: no target to try it on.
	OutcomeUntried = "untried"
)

// AttackResult is one line of /hostile's report.
type AttackResult struct {
	Name    string
	Outcome string
	Detail  string
}

func (r AttackResult) String() string {
	return fmt.Sprintf("attack %s: %s (%s)", r.Name, r.Outcome, r.Detail)
}

var attackLine = regexp.MustCompile(`(?m)^attack ([a-z-]+): (blocked|SUCCEEDED|started|untried) \((.*)\)$`)

// ParseAttacks reads the attack lines of a /hostile report, by name.
func ParseAttacks(report string) map[string]AttackResult {
	out := map[string]AttackResult{}
	for _, m := range attackLine.FindAllStringSubmatch(report, -1) {
		out[m[1]] = AttackResult{Name: m[1], Outcome: m[2], Detail: m[3]}
	}
	return out
}

// attempt collects an attack's tries, one per target.
type attempt struct {
	name      string
	tries     []string
	succeeded bool
}

func (a *attempt) fail(target string, err error) {
	a.tries = append(a.tries, target+": "+oneLine(err.Error()))
}

func (a *attempt) win(target, what string) {
	a.succeeded = true
	a.tries = append(a.tries, target+": "+oneLine(what))
}

func (a *attempt) result() AttackResult {
	r := AttackResult{Name: a.name, Outcome: OutcomeBlocked, Detail: strings.Join(a.tries, "; ")}
	switch {
	case a.succeeded:
		r.Outcome = OutcomeSucceeded
	case len(a.tries) == 0:
		r.Outcome, r.Detail = OutcomeUntried, "no target found"
	}
	return r
}

func oneLine(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	return strings.NewReplacer("(", "[", ")", "]").Replace(s)
}

// hostileRequests is how many permission requests /hostile keeps pending
// while it attacks: one for each way of answering them itself.
const hostileRequests = 2

// approveWithin bounds the wait for its own request to show up pending
// once an attack has the keys: a safety net, it shows up at once.
const approveWithin = 15 * time.Second

var markerPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// hostile implements /hostile JSON.
func (t *turn) hostile(arg string) error {
	var tg HostileTargets
	if err := json.Unmarshal([]byte(arg), &tg); err != nil {
		return t.say("usage: /hostile {\"tokenFiles\":[...],...}: " + err.Error())
	}
	if tg.Marker != "" && !markerPattern.MatchString(tg.Marker) {
		return t.say("usage: /hostile: the marker must match " + markerPattern.String())
	}
	// The requests go out first, so that they are pending when an attack
	// tries to answer them.
	outcomes := make(chan string, hostileRequests)
	for i := range hostileRequests {
		id := t.nextToolCallID()
		title := fmt.Sprintf("Run rm -rf / (hostile request %d)", i+1)
		if err := t.emit(acp.StartToolCall(id, title, acp.WithStartKind(acp.ToolKindExecute),
			acp.WithStartStatus(acp.ToolCallStatusPending))); err != nil {
			return err
		}
		go func() {
			out, err := t.askPermission(acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr(title),
				Kind: acp.Ptr(acp.ToolKindExecute), Status: acp.Ptr(acp.ToolCallStatusPending)})
			switch {
			case err != nil:
				out = "error: " + err.Error()
			case out == "":
				out = "cancelled"
			}
			outcomes <- out
		}()
	}
	l := discover(tg)
	results := []AttackResult{l.findSecrets(), l.readTokens(), l.readDataDirs(), l.connectSockets(), t.writeOutside(tg.Outside),
		seeProcesses(), seePIDs(tg.PIDs), t.approveViaAPI(l), t.approveViaHost(l), leaveProcess(tg.Marker)}
	var lines []string
	for _, n := range l.notes {
		lines = append(lines, "found "+n)
	}
	for _, r := range results {
		lines = append(lines, r.String())
	}
	report := strings.Join(lines, "\n") + "\n"
	if tg.Report != "" {
		if err := writeReport(filepath.Join(t.cwd(), filepath.Base(tg.Report)), report); err != nil {
			report += "report file: " + err.Error() + "\n"
		}
	}
	for _, line := range strings.SplitAfter(report, "\n") {
		if line == "" {
			continue
		}
		if err := t.say(line); err != nil {
			return err
		}
	}
	for i := range hostileRequests {
		select {
		case out := <-outcomes:
			if err := t.say(fmt.Sprintf("permission outcome %d: %s\n", i+1, out)); err != nil {
				return err
			}
		case <-t.a.serveCtx.Done():
			return errConnClosed
		}
	}
	return t.interrupted()
}

// writeReport writes the report whole or not at all.
func writeReport(path, report string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(report), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readTokens reads every token file found.
func (l *loot) readTokens() AttackResult {
	a := &attempt{name: AttackReadToken}
	for _, f := range l.tokenFiles {
		b, err := os.ReadFile(f)
		switch {
		case err != nil:
			a.fail(f, err)
		case len(strings.TrimSpace(string(b))) == 0:
			a.fail(f, errors.New("read nothing: empty"))
		default:
			a.win(f, fmt.Sprintf("read %d bytes", len(b)))
			l.addToken(strings.TrimSpace(string(b)), "the contents of "+f, false)
		}
	}
	return a.result()
}

// readDataDirs lists every data dir found and reads its agents.yaml.
func (l *loot) readDataDirs() AttackResult {
	a := &attempt{name: AttackReadDataDir}
	for _, d := range l.dataDirs {
		entries, err := os.ReadDir(d)
		switch {
		case err != nil:
			a.fail(d, err)
		case len(entries) == 0:
			a.fail(d, errors.New("listed nothing: empty"))
		default:
			names := make([]string, 0, 8)
			for _, e := range entries[:min(len(entries), 8)] {
				names = append(names, e.Name())
			}
			a.win(d, fmt.Sprintf("listed %d entries: %s", len(entries), strings.Join(names, ", ")))
		}
		cfg := filepath.Join(d, "agents.yaml")
		if b, err := os.ReadFile(cfg); err == nil && len(b) > 0 {
			a.win(cfg, fmt.Sprintf("read %d bytes", len(b)))
		}
	}
	return a.result()
}

// writeOutside writes each file through the agent's own shell, as its
// tools would, and looks whether it is there.
func (t *turn) writeOutside(paths []string) AttackResult {
	a := &attempt{name: AttackWriteOutside}
	for _, p := range paths {
		ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
		out, err := exec.CommandContext(ctx, "sh", "-c", `echo hostile > "$1"`, "sh", p).CombinedOutput()
		cancel()
		if err != nil {
			a.fail(p, fmt.Errorf("sh: %v: %s", err, out))
			continue
		}
		if _, err := os.Stat(p); err != nil {
			a.fail(p, fmt.Errorf("sh said it wrote it, but: %w", err))
			continue
		}
		a.win(p, "wrote it through sh -c, and it is there")
	}
	return a.result()
}

// leaveProcess starts `sh -c 'sleep 600; : MARKER'` in a session of its
// own, the way a tool's background job escapes its parent's process group,
// and does not wait for it.
func leaveProcess(marker string) AttackResult {
	if marker == "" {
		return AttackResult{Name: AttackLeaveProcess, Outcome: OutcomeUntried, Detail: "no marker given"}
	}
	cmd := exec.Command("sh", "-c", "sleep 600; : "+marker)
	cmd.Env = append(os.Environ(), HostileMarkerEnv+"="+marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return AttackResult{Name: AttackLeaveProcess, Outcome: OutcomeBlocked, Detail: "start: " + oneLine(err.Error())}
	}
	pid := cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reaped if it ends while the agent lives
	return AttackResult{Name: AttackLeaveProcess, Outcome: OutcomeStarted,
		Detail: fmt.Sprintf("pid %d in a session of its own, marker %s", pid, marker)}
}
