package demoagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// session is one conversation opened on this connection (new, loaded or
// resumed). Every update is appended to its file as it is sent, so that a
// crash keeps everything the client has already seen.
type session struct {
	mu         sync.Mutex
	file       *sessionFile
	running    bool
	cancelTurn context.CancelFunc // ends the running turn's context
	// deaf is how many session/cancel notifications the running turn
	// ignores (/deaf), -1 for all.
	deaf int
	// options are the mode and model set on this connection (see modes.go).
	options options
	// cost is what the session cost so far, as /loop reports it (USD; on
	// this connection only).
	cost float64
}

// unknownSession builds the configured "session not found" error. Real agents
// disagree on its shape (see DESIGN.md §4), so tests pick one with flags.
func (a *agent) unknownSession(id acp.SessionId) error {
	if a.cfg.unknownData != "" {
		return &acp.RequestError{Code: a.cfg.unknownCode, Message: a.cfg.unknownMessage, Data: json.RawMessage(a.cfg.unknownData)}
	}
	data := map[string]any{"uri": string(id)}
	if a.cfg.unknownDetails != "" {
		data["details"] = a.cfg.unknownDetails
	}
	return &acp.RequestError{Code: a.cfg.unknownCode, Message: a.cfg.unknownMessage, Data: data}
}

func newSessionID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return "demo-" + hex.EncodeToString(b)
}

func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return acp.NewInvalidParams(map[string]any{"error": "cwd must be an absolute path", "cwd": cwd})
	}
	return nil
}

// createSession persists a fresh session under id and registers it.
func (a *agent) createSession(id, cwd string, mcp []acp.McpServer, dirs []string) error {
	servers, err := json.Marshal(mcp)
	if err != nil {
		return err
	}
	if mcp == nil {
		servers = json.RawMessage("[]")
	}
	now := time.Now().UTC()
	f := &sessionFile{ID: id, Cwd: cwd, McpServers: servers, AdditionalDirectories: dirs,
		History: []json.RawMessage{}, CreatedAt: now}
	if err := a.store.rewrite(f); err != nil {
		return acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	a.mu.Lock()
	a.sessions[id] = &session{file: f}
	a.mu.Unlock()
	return nil
}

// openSession returns the session from memory or disk, or nil if unknown.
func (a *agent) openSession(id string) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[id]; ok {
		return s, nil
	}
	f, err := a.store.load(id)
	if err != nil {
		return nil, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	if f == nil {
		return nil, nil
	}
	s := &session{file: f}
	a.sessions[id] = s
	return s, nil
}

// rebind stores the cwd and MCP servers given on load/resume: the client is
// the source of truth for them, and a later load should see the latest.
func (a *agent) rebind(s *session, cwd string, mcp []acp.McpServer, dirs []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file.Cwd = cwd
	if mcp != nil {
		b, err := json.Marshal(mcp)
		if err != nil {
			return err
		}
		s.file.McpServers = b
	}
	if dirs != nil {
		s.file.AdditionalDirectories = dirs
	}
	if err := a.store.rewrite(s.file); err != nil {
		return acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	return nil
}

// NewSession creates and persists a session, then announces the commands
// once the response is on the wire.
func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if err := a.checkAuth(false); err != nil {
		return acp.NewSessionResponse{}, err
	}
	if err := checkCwd(p.Cwd); err != nil {
		return acp.NewSessionResponse{}, err
	}
	id := newSessionID()
	if err := a.createSession(id, p.Cwd, p.McpServers, p.AdditionalDirectories); err != nil {
		return acp.NewSessionResponse{}, err
	}
	// Real agents send available_commands_update outside any turn, after
	// session/new has answered; the first line naming the fresh id is that
	// answer, so the hook fires right after it.
	a.wire.afterLine(`"sessionId":"`+id+`"`, func() { a.announceCommands(acp.SessionId(id)) })
	return acp.NewSessionResponse{SessionId: acp.SessionId(id), Modes: modeState(options{}), ConfigOptions: configOptions(options{})}, nil
}

func (a *agent) announceCommands(id acp.SessionId) {
	_ = a.conn.SessionUpdate(a.serveCtx, acp.SessionNotification{
		SessionId: id,
		Update: acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{
			AvailableCommands: availableCommands(),
		}},
	})
}

// LoadSession replays the stored history as session/update notifications
// before answering, as ACP requires.
func (l loadingAgent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	a := l.agent
	if a.cfg.hangOnLoad {
		// Like an agent stuck restoring a huge session: never answers.
		<-ctx.Done()
		return acp.LoadSessionResponse{}, ctx.Err()
	}
	if err := a.checkAuth(false); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	if err := checkCwd(p.Cwd); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	s, err := a.openSession(string(p.SessionId))
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	if s == nil {
		if !a.cfg.loadUnknownCreates {
			return acp.LoadSessionResponse{}, a.unknownSession(p.SessionId)
		}
		// Imitates an agent that silently starts an empty conversation
		// under the requested id: success, nothing replayed.
		return acp.LoadSessionResponse{}, a.createSession(string(p.SessionId), p.Cwd, p.McpServers, p.AdditionalDirectories)
	}
	if err := a.rebind(s, p.Cwd, p.McpServers, p.AdditionalDirectories); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	s.mu.Lock()
	history := append([]json.RawMessage(nil), s.file.History...)
	s.mu.Unlock()
	if a.cfg.replayAfterResponse {
		// Some real agents answer session/load first and replay after.
		go func() {
			time.Sleep(50 * time.Millisecond)
			for _, raw := range history {
				if a.replay(p.SessionId, raw) != nil {
					return
				}
			}
		}()
		return loaded(s), nil
	}
	for _, raw := range history {
		if err := a.replay(p.SessionId, raw); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	}
	return loaded(s), nil
}

// loaded is the session/load answer: the session's modes and options.
func loaded(s *session) acp.LoadSessionResponse {
	o := s.currentOptions()
	return acp.LoadSessionResponse{Modes: modeState(o), ConfigOptions: configOptions(o)}
}

// storedSession is stored session id, asked for from directory cwd (a
// resume or a fork): the credentials and cwd checked first, an unknown id
// the configured unknown-session error.
func (a *agent) storedSession(id acp.SessionId, cwd string) (*session, error) {
	if err := a.checkAuth(false); err != nil {
		return nil, err
	}
	if err := checkCwd(cwd); err != nil {
		return nil, err
	}
	s, err := a.openSession(string(id))
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, a.unknownSession(id)
	}
	return s, nil
}

// ResumeSession reattaches to a stored session without replaying anything.
func (a *agent) ResumeSession(_ context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	if a.cfg.noResume || a.cfg.resumeUnsupported {
		return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
	}
	s, err := a.storedSession(p.SessionId, p.Cwd)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	if err := a.rebind(s, p.Cwd, p.McpServers, p.AdditionalDirectories); err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	o := s.currentOptions()
	return acp.ResumeSessionResponse{Modes: modeState(o), ConfigOptions: configOptions(o)}, nil
}

// Cancel stops the running turn of the session, if any; the turn then
// answers its prompt with stopReason "cancelled".
func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	a.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.running:
	case s.deaf != 0:
		if s.deaf > 0 {
			s.deaf--
		}
	default:
		s.cancelTurn()
	}
	return nil
}

// deafness is how many cancels a prompt's turn ignores: /deaf [N] (all
// when N is omitted), 0 for any other prompt.
func deafness(prompt []acp.ContentBlock) int {
	for _, b := range prompt {
		if b.Text == nil {
			continue
		}
		f := strings.Fields(b.Text.Text)
		if len(f) == 0 || f[0] != "/deaf" {
			return 0
		}
		if len(f) > 1 {
			if n, err := strconv.Atoi(f[1]); err == nil && n >= 0 {
				return n
			}
		}
		return -1
	}
	return 0
}

// Prompt runs one turn. Only sessions opened on this connection (new, load
// or resume) accept prompts, like a real agent after a restart; one turn at
// a time per session.
func (a *agent) Prompt(_ context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	if err := a.checkAuth(true); err != nil {
		return acp.PromptResponse{}, err
	}
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	if a.closing {
		a.mu.Unlock()
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "agent is shutting down"})
	}
	if s == nil {
		a.mu.Unlock()
		return acp.PromptResponse{}, a.unknownSession(p.SessionId)
	}
	a.turns.Add(1)
	a.mu.Unlock()
	defer a.turns.Done()

	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return acp.PromptResponse{}, &acp.RequestError{Code: -32603, Message: "prompt already running",
			Data: map[string]any{"sessionId": string(p.SessionId)}}
	}
	turnCtx, cancel := context.WithCancel(a.serveCtx)
	s.running, s.cancelTurn, s.deaf = true, cancel, deafness(p.Prompt)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running, s.cancelTurn = false, nil
		s.mu.Unlock()
		cancel()
	}()
	forked := s.forkedFirstTurn()
	// The prompt is history too: load replays it as user_message_chunk.
	for _, block := range p.Prompt {
		b, err := json.Marshal(acp.UpdateUserMessage(block))
		if err != nil {
			return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
		}
		if err := a.record(s, b); err != nil {
			return acp.PromptResponse{}, err
		}
	}

	t := &turn{a: a, s: s, sid: p.SessionId, ctx: turnCtx, forked: forked}
	err := t.run(p.Prompt)
	switch {
	case err == nil:
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: t.tokens}, nil
	case errors.Is(err, errCancelled):
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	default:
		return acp.PromptResponse{}, err
	}
}

// emit sends one update through the SDK and then appends it to the stored
// history, so the file always holds what the client has been sent.
func (a *agent) emit(s *session, sid acp.SessionId, u acp.SessionUpdate) error {
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if err := a.conn.SessionUpdate(a.serveCtx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
		return fmt.Errorf("%w: %v", errConnClosed, err)
	}
	return a.record(s, b)
}

// emitText sends an agent_message_chunk of text, in ACP message messageID
// ("" for none), and records it. The update and its line are encoded by
// hand (textChunk, textChunkLine), the same bytes the SDK writes for the
// update (tested): /stream N spent most of the agent's time in the SDK's
// encoder, which marshals every update, decodes it again and re-encodes it,
// and the daemon's throughput figure is about the daemon.
func (a *agent) emitText(s *session, sid acp.SessionId, messageID, text string) error {
	u := textChunk(messageID, text)
	if _, err := a.wire.Write(textChunkLine(sid, u)); err != nil {
		return fmt.Errorf("%w: %v", errConnClosed, err)
	}
	return a.record(s, u)
}

// textChunk is json.Marshal(acp.UpdateAgentMessageText(text)) with
// messageId set when messageID is not "", without reflection.
func textChunk(messageID, text string) json.RawMessage {
	b := make([]byte, 0, len(text)+len(messageID)+96)
	b = append(b, `{"content":{"text":`...)
	b = appendJSONString(b, text)
	b = append(b, `,"type":"text"}`...)
	if messageID != "" {
		b = append(b, `,"messageId":`...)
		b = appendJSONString(b, messageID)
	}
	return append(b, `,"sessionUpdate":"agent_message_chunk"}`...)
}

// textChunkLine is the session/update notification line carrying update
// (compact JSON, as textChunk makes it).
func textChunkLine(sid acp.SessionId, update json.RawMessage) []byte {
	b := make([]byte, 0, len(update)+len(sid)+80)
	b = append(b, `{"jsonrpc":"2.0","method":"`+acp.ClientMethodSessionUpdate+`","params":{"sessionId":`...)
	b = appendJSONString(b, string(sid))
	b = append(b, `,"update":`...)
	b = append(b, update...)
	return append(b, "}}\n"...)
}

// appendJSONString appends s as encoding/json encodes a string.
func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}

// emitRaw writes a session/update whose payload the SDK cannot represent
// (an unknown sessionUpdate kind) directly on the wire.
func (a *agent) emitRaw(s *session, sid acp.SessionId, update json.RawMessage) error {
	if err := a.writeRawUpdate(sid, update); err != nil {
		return err
	}
	return a.record(s, update)
}

// flood writes every update to the wire in one Write, as fast as the pipe
// takes it, then records them all at once: an agent far faster than its
// client, to test that the client slows it down rather than failing.
func (a *agent) flood(s *session, sid acp.SessionId, updates []json.RawMessage) error {
	var buf []byte
	for _, u := range updates {
		line, err := updateLine(sid, u)
		if err != nil {
			return err
		}
		buf = append(buf, line...)
	}
	if _, err := a.wire.Write(buf); err != nil {
		return fmt.Errorf("%w: %v", errConnClosed, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := a.store.appendUpdates(s.file.ID, updates); err != nil {
		return acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	s.file.History = append(s.file.History, updates...)
	return nil
}

// updateLine is a session/update notification as one wire line.
func updateLine(sid acp.SessionId, update json.RawMessage) ([]byte, error) {
	line, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  acp.ClientMethodSessionUpdate,
		"params":  map[string]any{"sessionId": sid, "update": update},
	})
	return append(line, '\n'), err
}

func (a *agent) writeRawUpdate(sid acp.SessionId, update json.RawMessage) error {
	line, err := updateLine(sid, update)
	if err != nil {
		return err
	}
	if _, err := a.wire.Write(line); err != nil {
		return fmt.Errorf("%w: %v", errConnClosed, err)
	}
	return nil
}

func (a *agent) record(s *session, update json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := a.store.appendUpdate(s.file.ID, update); err != nil {
		return acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	s.file.History = append(s.file.History, update)
	return nil
}

// sdkKinds are the sessionUpdate kinds the SDK can encode; anything else in
// the history was written raw and is replayed raw.
var sdkKinds = map[string]bool{
	"user_message_chunk": true, "agent_message_chunk": true, "agent_thought_chunk": true,
	"tool_call": true, "tool_call_update": true, "plan": true,
}

func (a *agent) replay(sid acp.SessionId, raw json.RawMessage) error {
	if !sdkKinds[updateKind(raw)] {
		return a.writeRawUpdate(sid, raw)
	}
	var u acp.SessionUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		return acp.NewInternalError(map[string]any{"error": "corrupt history entry: " + err.Error()})
	}
	if err := a.conn.SessionUpdate(a.serveCtx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
		return fmt.Errorf("%w: %v", errConnClosed, err)
	}
	return nil
}
