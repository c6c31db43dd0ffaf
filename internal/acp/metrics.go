package acp

import (
	"slices"
	"strings"
	"sync"
)

// ProcessCount is what happened to one profile's agent processes since
// tetherd started: those running now, those started and those that exited,
// by how they exited.
type ProcessCount struct {
	Profile string
	Running int64
	Starts  int64
	// Exits counts reaped processes by outcome: "ok" (code 0), "error"
	// (another code) or "signal".
	Exits map[string]int64
}

// processStats counts agent processes for the whole OS process, like the
// Go runtime's own statistics: every Start of this binary is counted,
// whichever daemon, probe or test started it.
var processStats = struct {
	mu sync.Mutex
	m  map[string]*ProcessCount
}{m: map[string]*ProcessCount{}}

func profileLabel(p string) string {
	if p == "" {
		return "unnamed"
	}
	return p
}

func countStart(profile string) {
	processStats.mu.Lock()
	defer processStats.mu.Unlock()
	c := processStats.m[profileLabel(profile)]
	if c == nil {
		c = &ProcessCount{Profile: profileLabel(profile), Exits: map[string]int64{}}
		processStats.m[c.Profile] = c
	}
	c.Running++
	c.Starts++
}

func countExit(profile string, e Exit) {
	outcome := "ok"
	switch {
	case e.Signal != "":
		outcome = "signal"
	case e.Code != 0:
		outcome = "error"
	}
	processStats.mu.Lock()
	defer processStats.mu.Unlock()
	c := processStats.m[profileLabel(profile)] // countStart ran first
	c.Running--
	c.Exits[outcome]++
}

// ProcessCounts returns a copy of the agent process counts, one entry per
// profile that ever started a process, sorted by profile.
func ProcessCounts() []ProcessCount {
	processStats.mu.Lock()
	defer processStats.mu.Unlock()
	out := make([]ProcessCount, 0, len(processStats.m))
	for _, c := range processStats.m {
		cp := *c
		cp.Exits = make(map[string]int64, len(c.Exits))
		for k, v := range c.Exits {
			cp.Exits[k] = v
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b ProcessCount) int { return strings.Compare(a.Profile, b.Profile) })
	return out
}
