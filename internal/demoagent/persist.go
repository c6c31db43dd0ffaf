package demoagent

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// sessionFile is one session as stored by the demo agent. The agent keeps
// its own state, like a real agent does, so that session/load after a
// restart has something to replay; the daemon's transcript is a separate
// record.
//
// On disk it is one JSON-lines file per session: the first line is this
// struct (the header), every further line is one session/update payload in
// the order it was sent (the user's prompts as user_message_chunk, then
// what the agent streamed). Updates are appended as they are sent, so a
// crash mid-turn keeps exactly what the client has seen, at a constant cost
// per update; rewriting a whole JSON document per update made /stream N
// quadratic. The header changes only on new/load/resume, and then the file
// is rewritten atomically (temp + rename).
type sessionFile struct {
	ID  string `json:"id"`
	Cwd string `json:"cwd"`
	// McpServers is kept as the JSON the agent was given; the agent never
	// connects to them, it only has to remember them like a real agent would.
	McpServers            json.RawMessage `json:"mcpServers"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
	CreatedAt             time.Time       `json:"createdAt"`
	// ForkedFrom is the session this one was forked from (session/fork),
	// with Forked history entries copied.
	ForkedFrom string `json:"forkedFrom,omitempty"`
	Forked     int    `json:"forked,omitempty"`

	// History is the update lines; session/load replays it verbatim.
	History []json.RawMessage `json:"-"`
	// NextToolCall numbers tool calls so ids stay unique across restarts;
	// it is recomputed from History on load.
	NextToolCall int `json:"-"`
}

// stateStore keeps one file per session in a directory.
type stateStore struct {
	dir string
	// appends holds each session's file open for appending once it has
	// been appended to: opening it per update cost more than the write.
	// rewrite drops the entry, since it replaces the file.
	mu      sync.Mutex
	appends map[string]*os.File
}

func newStateStore(dir string) (*stateStore, error) {
	if dir == "" {
		return nil, errors.New("demoagent: empty state dir")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("demoagent: create state dir: %w", err)
	}
	return &stateStore{dir: dir, appends: map[string]*os.File{}}, nil
}

// defaultStateDir honours TETHER_DEMO_STATE_DIR first so that tests and the
// daemon can isolate agents without passing flags through profiles.
func defaultStateDir() string {
	if d := os.Getenv("TETHER_DEMO_STATE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tether-demo-agent")
	}
	return filepath.Join(os.TempDir(), "tether-demo-agent")
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// fileFor maps a session id to its file. Ids come from the client on
// session/load, so anything that is not a plain name is hashed rather than
// trusted as a path component.
func (s *stateStore) fileFor(id string) string {
	name := id
	if !safeID.MatchString(id) {
		sum := sha256.Sum256([]byte(id))
		name = "x-" + hex.EncodeToString(sum[:16])
	}
	return filepath.Join(s.dir, name+".jsonl")
}

// load reads a session; it returns (nil, nil) when the session does not exist.
func (s *stateStore) load(id string) (*sessionFile, error) {
	b, err := os.ReadFile(s.fileFor(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	var f *sessionFile
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if f == nil {
			f = &sessionFile{}
			if err := json.Unmarshal(line, f); err != nil {
				return nil, fmt.Errorf("demoagent: session %s header: %w", id, err)
			}
			continue
		}
		if !json.Valid(line) {
			// Only a torn final append (power loss) can produce this;
			// everything before it is intact, so keep it.
			break
		}
		f.History = append(f.History, json.RawMessage(bytes.Clone(line)))
		if updateKind(line) == "tool_call" {
			f.NextToolCall++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("demoagent: read session %s: %w", id, err)
	}
	if f == nil || f.ID != id {
		// Empty, a hash collision or a hand-edited file: treat as not
		// found rather than serving another session's history.
		return nil, nil
	}
	return f, nil
}

// rewrite replaces the whole file atomically (temp + rename), so a crash
// while writing leaves the previous complete version, never a torn header.
// There is no fsync: the crashes this guards against are process exits,
// for which the page cache survives.
func (s *stateStore) rewrite(f *sessionFile) error {
	var buf bytes.Buffer
	header, err := json.Marshal(f)
	if err != nil {
		return err
	}
	buf.Write(header)
	buf.WriteByte('\n')
	for _, u := range f.History {
		buf.Write(u)
		buf.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(s.dir, ".session-*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// Under s.mu, so no append reopens the old file in between: a cached
	// handle would append to the replaced file.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropAppend(f.ID)
	if err := os.Rename(tmp.Name(), s.fileFor(f.ID)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// appendUpdate adds one history line with a single write, which a process
// crash cannot split.
func (s *stateStore) appendUpdate(id string, update json.RawMessage) error {
	return s.appendUpdates(id, []json.RawMessage{update})
}

// appendUpdates appends several updates to the history in one write.
func (s *stateStore) appendUpdates(id string, updates []json.RawMessage) error {
	var line []byte
	for _, u := range updates {
		line = append(append(line, u...), '\n')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fh := s.appends[id]
	if fh == nil {
		var err error
		if fh, err = os.OpenFile(s.fileFor(id), os.O_WRONLY|os.O_APPEND, 0); err != nil {
			return err
		}
		s.appends[id] = fh
	}
	if _, err := fh.Write(line); err != nil {
		s.dropAppend(id)
		return err
	}
	return nil
}

// dropAppend closes a session's cached append handle; s.mu is held.
func (s *stateStore) dropAppend(id string) {
	if fh := s.appends[id]; fh != nil {
		_ = fh.Close()
		delete(s.appends, id)
	}
}

// updateKind returns the sessionUpdate discriminator of an update payload.
func updateKind(raw []byte) string {
	var head struct {
		Kind string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(raw, &head)
	return head.Kind
}
