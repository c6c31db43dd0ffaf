package crash_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostChecks lists what the detached executor host holds of credentials
// checks: its sessions in GET /executors and its session directories.
func (w *world) hostChecks() []string {
	w.t.Helper()
	var out []string
	for _, h := range list(w.get("/executors"), "hosts") {
		for _, s := range list(h, "sessions") {
			if id, _ := s["sessionId"].(string); strings.HasPrefix(id, "credentials-check-") {
				out = append(out, "GET /executors: "+id)
			}
		}
	}
	return append(out, w.hostCheckDirs()...)
}

// hostCheckDirs lists the credentials checks' session directories of the
// detached executor host (it keeps them while it does not run).
func (w *world) hostCheckDirs() []string {
	var out []string
	ents, _ := os.ReadDir(filepath.Join(w.dir, "host", "sessions"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "credentials-check-") {
			out = append(out, "host dir: "+e.Name())
		}
	}
	return out
}

// killDuringCheck sends a create of profile (an agent that asked for
// credentials) in the background and kills tetherd with SIGKILL once its
// credentials check is on the detached executor host.
func (w *world) killDuringCheck(profile string) {
	w.t.Helper()
	body, _ := json.Marshal(map[string]any{"agentProfileId": profile, "cwd": w.t.TempDir()})
	req, _ := http.NewRequest(http.MethodPost, "http://"+w.addr+"/session", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	w.waitFor("a check on the host", func() bool { return len(w.hostChecks()) > 0 })
	w.kill9()
}

// waitAgentsEnded waits until no agent of profile runs.
func (w *world) waitAgentsEnded(profile string) {
	w.t.Helper()
	w.waitFor("the agents of "+profile+" to end", func() bool {
		for _, p := range w.processes("demo-agent") {
			if strings.Contains(p.cmd, "agent-state/"+profile) {
				return false
			}
		}
		return true
	})
}

// TestCredentialsCheckLeftOnTheHost (issue 28 item 7, tried again from
// outside): a create of a profile whose agent asked for credentials
// checks them on the detached executor host, in a throwaway session of
// the host (credentials-check-…) that it stops. Refused creates, one and
// several at once, leave nothing on the host and nothing in GET /sessions.
// tetherd killed mid-check (the agent starting on the host) leaves the
// throwaway session there; the next tetherd stops it: its agent ends and
// the host forgets it. Before the fix it stayed on the host for good, its
// agent running, listed by GET /executors and in the host's directory.
func TestCredentialsCheckLeftOnTheHost(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	keyless := profile{id: "keyless", flags: []string{"--auth-method", "demo-key", "--startup-delay", "1500ms"}}
	w := newWorld(t, profile{id: "demo"}, keyless)
	w.start("--executor", "detached")
	demo, _ := w.createSession("demo")
	w.prompt(demo, "/echo host up", "p1")
	w.waitTurn(demo, "p1")
	w.waitFor("the probe", func() bool { c, _ := w.profileCredentials("keyless"); return c["status"] == "required" })
	create := func() (int, map[string]any) {
		return w.do(http.MethodPost, "/session", map[string]any{"agentProfileId": "keyless", "cwd": t.TempDir()})
	}
	if code, m := create(); code != http.StatusConflict || m["code"] != "agent_auth_required" {
		t.Fatalf("create: got %d %v, want 409 agent_auth_required", code, m)
	}
	answers := w.postAll("/session", 3, func(int) any { return map[string]any{"agentProfileId": "keyless", "cwd": t.TempDir()} })
	for i, a := range answers {
		if a.status != http.StatusConflict {
			t.Errorf("create %d at once: got %d %s, want 409", i, a.status, a.raw)
		}
	}
	w.waitFor("the checks to leave the host", func() bool { return len(w.hostChecks()) == 0 })
	if ss := list(w.get("/sessions"), "sessions"); len(ss) != 1 || ss[0]["id"] != demo {
		t.Errorf("GET /sessions: got %v, want the demo session alone", ss)
	}

	// tetherd killed while the check's agent starts on the host.
	w.killDuringCheck("keyless")
	w.start("--executor", "detached")
	w.waitFor("the check left by the killed tetherd to be stopped and forgotten", func() bool { return len(w.hostChecks()) == 0 })
	w.waitAgentsEnded("keyless")
	if ss := list(w.get("/sessions"), "sessions"); len(ss) != 1 || ss[0]["id"] != demo {
		t.Errorf("GET /sessions after the restart: got %v, want the demo session alone", ss)
	}
	checkNoErrorLogged(t, "tetherd after the restart", w.daemonLog())
}

// TestCredentialsCheckLeftForALaterDaemon: a credentials check that a
// killed tetherd left on the detached executor host is stopped by a later
// tetherd that never starts a host on its own (--executor standalone).
// If the host still runs, the later tetherd finds it at its socket and
// sweeps the check at start-up, without starting another host. If the
// host was stopped meanwhile (it keeps the check's directory), the later
// tetherd leaves it stopped while its sessions run as its children, and
// sweeps the check once a session asks for the detached runtime and so
// starts the host. Before the fix every tetherd started the host at
// start-up for the sweep, asked or not.
func TestCredentialsCheckLeftForALaterDaemon(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	tests := []struct {
		name string
		// stopHost stops the host after the kill, before the restart.
		stopHost bool
	}{
		{name: "host running"},
		{name: "host stopped", stopHost: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keyless := profile{id: "keyless", flags: []string{"--auth-method", "demo-key", "--startup-delay", "1500ms"}}
			w := newWorld(t, profile{id: "demo"}, keyless)
			w.start("--executor", "detached")
			w.waitFor("the probe", func() bool { c, _ := w.profileCredentials("keyless"); return c["status"] == "required" })
			// tetherd killed while the check's agent starts on the host.
			w.killDuringCheck("keyless")
			hosts := w.hostProcesses()
			if len(hosts) != 1 {
				t.Fatalf("after the kill: got executor hosts %v, want 1", hosts)
			}
			if tc.stopHost {
				// Stopped once the check's agent has started: a host stopped
				// during the start gives the check up itself.
				w.waitFor("the check's agent to start on the host", func() bool {
					b, _ := os.ReadFile(filepath.Join(w.dir, "host", "host.log"))
					for _, l := range strings.Split(string(b), "\n") {
						if strings.Contains(l, `msg="host: agent started"`) && strings.Contains(l, "session=credentials-check-") {
							return true
						}
					}
					return false
				})
				w.stopHosts()
				w.waitFor("the host to exit", func() bool { return len(w.hostProcesses()) == 0 })
				if left := w.hostCheckDirs(); len(left) == 0 {
					t.Fatal("the stopped host kept no credentials check's directory: nothing left to sweep")
				}
			}

			w.start() // --executor standalone
			if !tc.stopHost {
				w.waitFor("the check left on the running host to be stopped and forgotten", func() bool { return len(w.hostChecks()) == 0 })
				if got := w.hostProcesses(); len(got) != 1 || got[0].pid != hosts[0].pid {
					t.Errorf("executor hosts after the sweep: got %v, want the one that ran, %v", got, hosts[0])
				}
			} else {
				sid, _ := w.createSessionOn("demo", "")
				w.prompt(sid, "/echo standalone", "p1")
				w.waitTurn(sid, "p1")
				if got := w.hostProcesses(); len(got) != 0 {
					t.Errorf("after a standalone session's turn: got executor hosts %v, want none (nothing asked for one)", got)
				}
				if left := w.hostCheckDirs(); len(left) == 0 {
					t.Error("the check's directory went while no host ran, want it left for the host to give up")
				}
				hosted, _ := w.createSessionOn("demo", "detached")
				w.prompt(hosted, "/echo detached", "p1")
				w.waitTurn(hosted, "p1")
				w.waitFor("the check left on the stopped host to be stopped and forgotten once a session started the host", func() bool { return len(w.hostChecks()) == 0 })
			}
			w.waitAgentsEnded("keyless")
			checkNoErrorLogged(t, "tetherd after the restart", w.daemonLog())
		})
	}
}
