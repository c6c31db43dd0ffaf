package demoagent

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// The client fs probes drive the client's fs/read_text_file and
// fs/write_text_file the way a careless or hostile agent would: paths are
// sent as given (relative ones joined to the cwd), with no check of the
// agent's own, so that the client's confinement and limits are what is
// tested. Each probe is one tool call whose result summarises the answers.

// fsProbeUsage lists the probes for /tool's usage line.
const fsProbeUsage = "read-range PATH LINE LIMIT | read-many N[/P] PATH | write PATH TEXT | write-many N[/P] PATH TEXT"

// maxProbeRequests bounds N so that a typo cannot exhaust the agent itself.
const maxProbeRequests = 100000

// probeShown is how many distinct answers a probe's summary lists.
const probeShown = 5

// fsProbe is one probe: it parses its arguments and returns the tool
// title, its kind and the requests to send (each returns the content
// served, or an error).
type fsProbe func(t *turn, args []string, rest string) (title string, kind acp.ToolKind, n, parallel int, req func() (string, error), err error)

var fsProbes = map[string]fsProbe{
	"read-range": func(t *turn, args []string, _ string) (string, acp.ToolKind, int, int, func() (string, error), error) {
		if len(args) != 3 {
			return "", "", 0, 0, nil, errors.New("usage: /tool read-range PATH LINE LIMIT")
		}
		line, err1 := strconv.Atoi(args[1])
		limit, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil {
			return "", "", 0, 0, nil, errors.New("usage: /tool read-range PATH LINE LIMIT (numbers)")
		}
		path := t.clientPath(args[0])
		return fmt.Sprintf("Read %s lines %d+%d", args[0], line, limit), acp.ToolKindRead, 1, 1, func() (string, error) {
			return t.clientRead(path, &line, &limit)
		}, nil
	},
	"read-many": func(t *turn, args []string, _ string) (string, acp.ToolKind, int, int, func() (string, error), error) {
		if len(args) != 2 {
			return "", "", 0, 0, nil, errors.New("usage: /tool read-many N[/P] PATH")
		}
		n, p, err := parseCount(args[0])
		if err != nil {
			return "", "", 0, 0, nil, err
		}
		path := t.clientPath(args[1])
		return fmt.Sprintf("Read %s %d times", args[1], n), acp.ToolKindRead, n, p, func() (string, error) {
			return t.clientRead(path, nil, nil)
		}, nil
	},
	"write": func(t *turn, args []string, rest string) (string, acp.ToolKind, int, int, func() (string, error), error) {
		if len(args) < 1 {
			return "", "", 0, 0, nil, errors.New("usage: /tool write PATH TEXT")
		}
		path, text := t.clientPath(args[0]), rest
		return "Write " + args[0], acp.ToolKindEdit, 1, 1, func() (string, error) {
			return "", t.clientWrite(path, text)
		}, nil
	},
	"write-many": func(t *turn, args []string, rest string) (string, acp.ToolKind, int, int, func() (string, error), error) {
		if len(args) < 2 {
			return "", "", 0, 0, nil, errors.New("usage: /tool write-many N[/P] PATH TEXT")
		}
		n, p, err := parseCount(args[0])
		if err != nil {
			return "", "", 0, 0, nil, err
		}
		path, text := t.clientPath(args[1]), rest
		return fmt.Sprintf("Write %s %d times", args[1], n), acp.ToolKindEdit, n, p, func() (string, error) {
			return "", t.clientWrite(path, text)
		}, nil
	},
}

// probeArity is how many leading words each probe takes before its TEXT.
var probeArity = map[string]int{"read-range": 3, "read-many": 2, "write": 1, "write-many": 2}

// parseCount reads "N" or "N/P": N requests, at most P in flight (P
// defaults to N, everything at once).
func parseCount(s string) (n, parallel int, err error) {
	ns, ps, hasP := strings.Cut(s, "/")
	n, err = strconv.Atoi(ns)
	if err != nil || n < 1 || n > maxProbeRequests {
		return 0, 0, fmt.Errorf("N must be 1..%d, got %q", maxProbeRequests, s)
	}
	parallel = n
	if hasP {
		if parallel, err = strconv.Atoi(ps); err != nil || parallel < 1 {
			return 0, 0, fmt.Errorf("P must be a positive number, got %q", s)
		}
	}
	return n, min(parallel, n), nil
}

// runProbe runs one probe as a tool call.
func (t *turn) runProbe(name string, probe fsProbe, arg string) error {
	words := strings.Fields(arg)
	k := min(probeArity[name], len(words))
	rest := arg
	for i := 0; i < k; i++ {
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), words[i]))
	}
	title, kind, n, parallel, req, err := probe(t, words[:k], rest)
	if err != nil {
		return t.say(err.Error())
	}
	id := t.nextToolCallID()
	if err := t.emit(acp.StartToolCall(id, title, acp.WithStartKind(kind),
		acp.WithStartStatus(acp.ToolCallStatusInProgress))); err != nil {
		return err
	}
	summary, failed := t.fanOut(n, parallel, req)
	if err := t.interrupted(); err != nil {
		return err
	}
	status := acp.ToolCallStatusCompleted
	if failed {
		status = acp.ToolCallStatusFailed
	}
	return t.emit(toolDone(id, status, summary))
}

// fanOut sends n requests, parallel at a time, and summarises the
// answers. A single request's summary is its content or error.
func (t *turn) fanOut(n, parallel int, req func() (string, error)) (string, bool) {
	var (
		mu       sync.Mutex
		served   = map[string]int{}
		failures = map[string]int{}
		wg       sync.WaitGroup
		slots    = make(chan struct{}, parallel)
	)
	for i := 0; i < n && t.ctx.Err() == nil; i++ {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			content, err := req()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures[err.Error()]++
			} else {
				served[content]++
			}
		}()
	}
	wg.Wait()
	if n == 1 {
		for msg := range failures {
			return msg, true
		}
		for content := range served {
			return truncate(content), false
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests: %d served, %d failed", n, total(served), total(failures))
	for _, c := range top(served) {
		fmt.Fprintf(&b, "\nserved ×%d: %q", served[c], truncate(c))
	}
	for _, m := range top(failures) {
		fmt.Fprintf(&b, "\nfailed ×%d: %s", failures[m], m)
	}
	return b.String(), len(failures) > 0
}

func total(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// top returns up to probeShown keys, most frequent first.
func top(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys[:min(len(keys), probeShown)]
}

// clientPath is the absolute path a probe sends: as given, or joined to
// the cwd (lexically, so "../x" stays an escape for the client to refuse).
func (t *turn) clientPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return t.cwd() + string(filepath.Separator) + p
}

func (t *turn) clientRead(path string, line, limit *int) (string, error) {
	t.a.mu.Lock()
	ok := t.a.clientReadFS
	t.a.mu.Unlock()
	if !ok {
		return "", errors.New("the client does not offer fs/read_text_file")
	}
	resp, err := t.a.conn.ReadTextFile(t.ctx, acp.ReadTextFileRequest{SessionId: t.sid, Path: path, Line: line, Limit: limit})
	if err != nil {
		return "", errors.New(requestErrorText(err))
	}
	return resp.Content, nil
}

func (t *turn) clientWrite(path, text string) error {
	t.a.mu.Lock()
	ok := t.a.clientWriteFS
	t.a.mu.Unlock()
	if !ok {
		return errors.New("the client does not offer fs/write_text_file")
	}
	if _, err := t.a.conn.WriteTextFile(t.ctx, acp.WriteTextFileRequest{SessionId: t.sid, Path: path, Content: text}); err != nil {
		return errors.New(requestErrorText(err))
	}
	return nil
}

// requestErrorText is "CODE MESSAGE" for a JSON-RPC error, so that equal
// refusals group in a summary whatever their data.
func requestErrorText(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.Code, re.Message)
	}
	return err.Error()
}
