// Package readme runs the README's curl walk-through as a reader would:
// its shell blocks, in order, with bash -e, against the real tetherd (the
// binary `make build` wrote, TETHERD_BIN) started as `make run` starts it,
// on a free port (TETHER_ADDR) with a scratch data directory
// (XDG_DATA_HOME), from a git repository. The walk-through is the first
// thing a new user runs; when it drifts from the daemon (a session closed
// before the section that needs it, a sleep too short for the first turn)
// every later call fails, and only running it notices.
package readme

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// section is the README's heading of the walk-through: its blocks run up to
// the next heading of the same level.
const section = "## curl walk-through"

// prelude runs before the README's blocks. It replaces curl by a function
// that runs the real curl as the README wrote it and checks its answer:
// 2xx, unless the line says otherwise with a trailing "# → STATUS [code]"
// (README_EXPECT, set around that line), in which case that status and that
// problem code. A failure is written to README_FAILURES as well as
// returned, because bash -e does not stop at a failure in a condition, a
// pipeline or a command substitution (while curl … | grep, SID=$(curl …)).
// A stream the README follows until Ctrl-C (curl -N) is ended, as the
// reader's Ctrl-C would, once its answer's headers are in.
const prelude = `set -o pipefail
curl() {
  local dir rc=0 status stream= stopped= a call
  dir=$(mktemp -d "$README_TMP/curl.XXXXXX")
  for a in "$@"; do
    case $a in --no-buffer|-[!-]*N*) stream=1 ;; esac
  done
  if [ -n "$stream" ]; then
    command curl -D "$dir/headers" "$@" >"$dir/body" &
    local pid=$!
    until grep -q $'^\r$' "$dir/headers" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    kill -TERM "$pid" 2>/dev/null && stopped=1
    wait "$pid" || rc=$?
    [ -z "$stopped" ] || rc=0
  else
    command curl -D "$dir/headers" "$@" >"$dir/body" || rc=$?
  fi
  cat "$dir/body"
  status=$(sed -n 's/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$dir/headers" | tail -n 1)
  call="curl ${*//$TETHER_TOKEN/<token>}"
  echo "${status:-none} $call" >>"$README_LOG"
  local want=${README_EXPECT%% *} code=
  [ "$README_EXPECT" = "$want" ] || code=${README_EXPECT#* }
  if [ "$rc" -ne 0 ]; then
    echo "$call: curl exited $rc (answer ${status:-none})" | tee -a "$README_FAILURES" >&2
    return 1
  elif [ -n "$want" ] && [ "$status" != "$want" ]; then
    echo "$call: answered $status, the README says $want" | tee -a "$README_FAILURES" >&2
    return 1
  elif [ -n "$code" ] && ! grep -q "\"code\":\"$code\"" "$dir/body"; then
    echo "$call: answered $status without code $code: $(head -c 300 "$dir/body")" | tee -a "$README_FAILURES" >&2
    return 1
  elif [ -z "$want" ] && [[ $status != 2?? ]]; then
    echo "$call: answered ${status:-nothing}, want 2xx: $(head -c 300 "$dir/body")" | tee -a "$README_FAILURES" >&2
    return 1
  fi
}
README_EXPECT=
`

// expectation is a trailing "# → 409 code" on a command line: the answer
// the README says that command gets.
var expectation = regexp.MustCompile(`#\s*→\s*([0-9]{3})(?:\s+([a-z_]+))?\s*$`)

// walkthrough is the runnable script made of the README's walk-through:
// the prelude, then every sh block of the section in order, each line that
// carries an expectation wrapped in README_EXPECT. curls counts the
// lines that call curl, for the check that they all ran.
func walkthrough(readme string) (script string, curls int, err error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == section {
			start = i
			break
		}
	}
	if start < 0 {
		return "", 0, fmt.Errorf("no %q section", section)
	}
	var b strings.Builder
	b.WriteString(prelude)
	blocks, inBlock, continued := 0, false, false
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if !inBlock && strings.HasPrefix(l, "## ") {
			break
		}
		if strings.HasPrefix(l, "```") {
			switch {
			case inBlock:
				inBlock = false
				b.WriteString("\n")
			case strings.TrimSpace(strings.TrimPrefix(l, "```")) == "sh":
				inBlock, continued = true, false
				blocks++
				fmt.Fprintf(&b, "# README.md:%d\n", i+1)
			}
			continue
		}
		if !inBlock {
			continue
		}
		code := l
		if j := strings.Index(l, "#"); j >= 0 && (j == 0 || l[j-1] == ' ') {
			code = l[:j]
		}
		if strings.Contains(code, "curl ") {
			curls++
		}
		m := expectation.FindStringSubmatch(l)
		switch {
		case m == nil || strings.HasPrefix(strings.TrimSpace(l), "#"):
			b.WriteString(l + "\n")
		case continued:
			return "", 0, fmt.Errorf("README.md:%d: an expected answer (# → %s) must be on a line that starts its command", i+1, m[1])
		default:
			fmt.Fprintf(&b, "README_EXPECT=%q\n%s\nREADME_EXPECT=\n", strings.TrimSpace(m[1]+" "+m[2]), l)
		}
		t := strings.TrimRight(code, " \t")
		continued = strings.HasSuffix(t, "\\") || strings.HasSuffix(t, "|") || strings.HasSuffix(t, "&&")
	}
	if inBlock {
		return "", 0, errors.New("an sh block of the walk-through is not closed")
	}
	if blocks == 0 || curls == 0 {
		return "", 0, fmt.Errorf("the %q section has no sh block with a curl call", section)
	}
	return b.String(), curls, nil
}

func TestWalkthroughScript(t *testing.T) {
	for _, tc := range []struct {
		name    string
		readme  string
		want    []string // parts of the script, in order
		curls   int
		wantErr string
	}{
		{
			name:   "blocks of the section in order, other sections and languages left out",
			readme: "## Before\n```sh\ncurl -s before\n```\n" + section + "\n```sh\ncurl -s one\n```\ntext\n```js\nfetch(x)\n```\n### Sub\n```sh\ncurl -s two\n```\n## After\n```sh\ncurl -s after\n```\n",
			want:   []string{"curl -s one\n", "curl -s two\n"},
			curls:  2,
		},
		{
			name:   "an expected answer wraps its line",
			readme: section + "\n```sh\ncurl -s -X POST $T/continue  # → 409 nothing_to_continue\n```\n",
			want:   []string{"README_EXPECT=\"409 nothing_to_continue\"\ncurl -s -X POST $T/continue  # → 409 nothing_to_continue\nREADME_EXPECT=\n"},
			curls:  1,
		},
		{
			name:   "an expected status without a code",
			readme: section + "\n```sh\ncurl -s $T/x # → 404\n```\n",
			want:   []string{"README_EXPECT=\"404\"\n"},
			curls:  1,
		},
		{
			name:   "a comment line with an arrow is no expectation",
			readme: section + "\n```sh\ncurl -s $T/tickets\n#   → 201 {\"ticket\":\"…\"}\n```\n",
			want:   []string{"curl -s $T/tickets\n#   → 201"},
			curls:  1,
		},
		{
			name:    "an expected answer on a continued line",
			readme:  section + "\n```sh\ncurl -s -X POST \\\n  $T/continue  # → 409\n```\n",
			wantErr: "must be on a line that starts its command",
		},
		{
			name:    "no walk-through",
			readme:  "## Quick start\n```sh\ncurl -s x\n```\n",
			wantErr: "no \"## curl walk-through\" section",
		},
		{
			name:    "a walk-through without commands",
			readme:  section + "\ntext only\n## Next\n",
			wantErr: "no sh block with a curl call",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script, curls, err := walkthrough(tc.readme)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if curls != tc.curls {
				t.Errorf("got %d curl lines, want %d", curls, tc.curls)
			}
			rest := strings.TrimPrefix(script, prelude)
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("got script\n%s\nwant it to contain, in order, %q", rest, w)
				}
				rest = rest[i+len(w):]
			}
			for _, never := range []string{"before", "after", "fetch"} {
				if strings.Contains(strings.TrimPrefix(script, prelude), never) {
					t.Errorf("got script\n%s\nwith %q, from outside the walk-through's sh blocks", script, never)
				}
			}
		})
	}
}

func TestCurlWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the walk-through needs curl:", err)
	}
	readme, err := os.ReadFile(filepath.Join(testbin.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, curls, err := walkthrough(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	bin := testbin.Tetherd(t)
	root := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"home", "xdg", "tmp", "project"} {
		dirs[d] = filepath.Join(root, d)
		if err := os.Mkdir(dirs[d], 0o700); err != nil {
			t.Fatal(err)
		}
	}
	addr := testbin.FreeAddr(t)
	// The environment of a new user: nothing of tetherd's set but where
	// `make run` keeps its data and listens.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TETHER_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+dirs["home"], "XDG_DATA_HOME="+dirs["xdg"], "TETHER_ADDR="+addr,
		"GIT_AUTHOR_NAME=reader", "GIT_AUTHOR_EMAIL=reader@example.com",
		"GIT_COMMITTER_NAME=reader", "GIT_COMMITTER_EMAIL=reader@example.com")
	project(t, dirs["project"], env)

	dataDir := filepath.Join(dirs["xdg"], "tether")
	logs := &testbin.LogBuffer{}
	daemon := exec.Command(bin, "serve") // make run
	daemon.Env, daemon.Stdout, daemon.Stderr = env, logs, logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop(t, daemon, dataDir)
		if t.Failed() {
			t.Logf("--- tetherd ---\n%s", logs.String())
			if b, err := os.ReadFile(filepath.Join(dataDir, "host", "host.log")); err == nil {
				t.Logf("--- executor host ---\n%s", b)
			}
		}
	})
	waitHealthy(t, addr, dataDir, logs)

	ctx := context.Background()
	if d, ok := t.Deadline(); ok { // say where it hung rather than be killed
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	logFile, failures := filepath.Join(dirs["tmp"], "calls"), filepath.Join(dirs["tmp"], "failures")
	scriptFile := filepath.Join(dirs["tmp"], "walkthrough.sh")
	if err := os.WriteFile(scriptFile, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sh := exec.CommandContext(ctx, "bash", "-e", scriptFile)
	sh.Dir, sh.Stdout, sh.Stderr = dirs["project"], &out, &out
	sh.Env = append(env, "README_TMP="+dirs["tmp"], "README_LOG="+logFile, "README_FAILURES="+failures)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its curls go with it
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	sh.WaitDelay = 10 * time.Second
	runErr := sh.Run()

	calls, _ := os.ReadFile(logFile)
	failed, _ := os.ReadFile(failures)
	if runErr != nil || len(failed) > 0 {
		t.Errorf("the walk-through failed (bash: %v):\n%s\n--- calls (status, command) ---\n%s\n--- output ---\n%s",
			runErr, failed, calls, out.String())
		return
	}
	// Every curl line ran (a loop runs its line more than once).
	if n := strings.Count(string(calls), "\n"); n < curls {
		t.Errorf("got %d curl calls, want at least the walk-through's %d curl lines:\n%s\n--- output ---\n%s", n, curls, calls, out.String())
	}
}

// project makes dir a git repository with a committed README.md, as the
// walk-through's reader is in one (its worktree session and git diff need
// it, and it reads README.md).
func project(t *testing.T, dir string, env []string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# a project\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README.md"}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// waitHealthy waits until the daemon answers /health and has written the
// token file the walk-through reads, failing t if it exits first.
func waitHealthy(t *testing.T, addr, dataDir string, logs *testbin.LogBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if _, terr := os.Stat(filepath.Join(dataDir, "token")); resp.StatusCode == http.StatusOK && terr == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tetherd did not become healthy on %s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the daemon with SIGTERM, then its detached executor host,
// which outlives the daemon on purpose (and would linger 10 minutes with
// the walk-through's agents): the host stops its agents as it exits.
func stop(t *testing.T, daemon *exec.Cmd, dataDir string) {
	t.Helper()
	_ = daemon.Process.Signal(syscall.SIGTERM)
	kill := time.AfterFunc(20*time.Second, func() { _ = daemon.Process.Kill() })
	_ = daemon.Wait()
	kill.Stop()
	pid := host.Running(filepath.Join(dataDir, "host"))
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for end := time.Now().Add(20 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the executor host %d still ran 20s after SIGTERM (killed now)", pid)
			return
		}
	}
}

// alive reports whether pid runs: a zombie (ended, not yet reaped by
// whoever adopted it) does not.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}
