package acp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tether/tether/internal/acp"
)

// schemaRelPath is the official ACP schema, pinned by package.json.
const schemaRelPath = "node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"

// schemaURL is the resource name the schema is registered under; subschemas
// are compiled as schemaURL + "#/$defs/Name".
const schemaURL = "schema.json"

// paramsDefByMethod maps what the daemon sends to the schema def its params
// must satisfy. A method missing here fails validation: the daemon must not
// send anything the test has not checked.
var paramsDefByMethod = map[string]string{
	"initialize":     "InitializeRequest",
	"session/new":    "NewSessionRequest",
	"session/load":   "LoadSessionRequest",
	"session/resume": "ResumeSessionRequest",
	"session/prompt": "PromptRequest",
	"session/cancel": "CancelNotification",
}

// notificationMethods are the methods the daemon sends without an id.
var notificationMethods = map[string]bool{"session/cancel": true}

// resultDefs are the answers the daemon gives to agent requests, keyed by
// the property that identifies them.
var resultDefs = []struct{ key, def string }{
	{"content", "ReadTextFileResponse"},
	{"outcome", "RequestPermissionResponse"},
}

// acpValidator checks client→agent lines against the official ACP schema.
type acpValidator struct {
	envelope     map[string]*jsonschema.Schema // ClientRequest, ClientNotification, ClientResponse, Client (top level)
	params       map[string]*jsonschema.Schema // by method
	results      map[string]*jsonschema.Schema // by def name
	anyResult    *jsonschema.Schema            // anyOf the results the daemon may give
	errorDef     *jsonschema.Schema
	rawDefs      map[string]map[string]any
	clientBranch int
}

var (
	validatorOnce sync.Once
	validatorVal  *acpValidator
	validatorErr  error
)

// schemaValidator compiles the ACP schema once per test binary. A missing
// schema is a failure, not a skip: `npm ci` provides it.
func schemaValidator(t *testing.T) *acpValidator {
	t.Helper()
	path := filepath.Join(repoRoot(t), schemaRelPath)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("ACP JSON schema not found at %s (%v): run `npm ci` in %s first (make test does)", path, err, repoRoot(t))
	}
	validatorOnce.Do(func() { validatorVal, validatorErr = compileValidator(path) })
	if validatorErr != nil {
		t.Fatalf("compile ACP schema: %v", validatorErr)
	}
	return validatorVal
}

func compileValidator(path string) (*acpValidator, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var top struct {
		AnyOf []struct {
			Title string `json:"title"`
		} `json:"anyOf"`
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	v := &acpValidator{
		envelope:     map[string]*jsonschema.Schema{},
		params:       map[string]*jsonschema.Schema{},
		results:      map[string]*jsonschema.Schema{},
		rawDefs:      top.Defs,
		clientBranch: -1,
	}
	for i, b := range top.AnyOf {
		if b.Title == "Client" {
			v.clientBranch = i
		}
	}
	if v.clientBranch < 0 {
		return nil, errors.New(`schema has no top-level anyOf branch titled "Client"`)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	compile := func(ptr string) (*jsonschema.Schema, error) {
		s, err := c.Compile(schemaURL + "#" + ptr)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", ptr, err)
		}
		return s, nil
	}
	def := func(name string) (*jsonschema.Schema, error) {
		if _, ok := top.Defs[name]; !ok {
			return nil, fmt.Errorf("schema has no $defs/%s", name)
		}
		return compile("/$defs/" + name)
	}
	for _, name := range []string{"ClientRequest", "ClientNotification", "ClientResponse"} {
		if v.envelope[name], err = def(name); err != nil {
			return nil, err
		}
	}
	if v.envelope["Client"], err = compile(fmt.Sprintf("/anyOf/%d", v.clientBranch)); err != nil {
		return nil, err
	}
	for method, name := range paramsDefByMethod {
		if v.params[method], err = def(name); err != nil {
			return nil, err
		}
	}
	for _, r := range resultDefs {
		if v.results[r.def], err = def(r.def); err != nil {
			return nil, err
		}
	}
	if v.errorDef, err = def("Error"); err != nil {
		return nil, err
	}
	// The anyOf the brief asks for, built as a schema of its own.
	anyOf := `{"anyOf":[` +
		`{"$ref":"schema.json#/$defs/ReadTextFileResponse"},` +
		`{"$ref":"schema.json#/$defs/RequestPermissionResponse"},` +
		`{"$ref":"schema.json#/$defs/WriteTextFileResponse"}]}`
	anyDoc, err := jsonschema.UnmarshalJSON(strings.NewReader(anyOf))
	if err != nil {
		return nil, err
	}
	if err := c.AddResource("client-results.json", anyDoc); err != nil {
		return nil, err
	}
	if v.anyResult, err = c.Compile("client-results.json"); err != nil {
		return nil, err
	}
	return v, nil
}

// lineInfo is what validate learned about one valid line.
type lineInfo struct {
	kind   string // "request", "notification", "response"
	method string // request/notification method
	result string // response: the def its result matched, or "error"
	params map[string]any
	res    map[string]any
}

// validate checks one line the daemon sent and reports what it was.
func (v *acpValidator) validate(line []byte) (lineInfo, error) {
	var info lineInfo
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return info, fmt.Errorf("not a single JSON value: %w", err)
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		return info, fmt.Errorf("not a JSON object: %w", err)
	}
	var version string
	if err := json.Unmarshal(msg["jsonrpc"], &version); err != nil || version != "2.0" {
		return info, fmt.Errorf(`jsonrpc: got %s, want "2.0"`, msg["jsonrpc"])
	}
	if err := v.envelope["Client"].Validate(inst); err != nil {
		return info, fmt.Errorf("top-level Client message: %w", err)
	}
	_, hasID := msg["id"]
	_, hasMethod := msg["method"]
	_, hasResult := msg["result"]
	_, hasError := msg["error"]
	var envelope string
	switch {
	case hasMethod && hasID:
		info.kind, envelope = "request", "ClientRequest"
	case hasMethod:
		info.kind, envelope = "notification", "ClientNotification"
	case hasID && hasResult != hasError:
		info.kind, envelope = "response", "ClientResponse"
	default:
		return info, errors.New("neither a request, a notification nor a response (need method, or id with exactly one of result/error)")
	}
	if err := v.envelope[envelope].Validate(inst); err != nil {
		return info, fmt.Errorf("%s: %w", envelope, err)
	}
	obj := inst.(map[string]any)

	if info.kind == "response" {
		if hasError {
			info.result = "error"
			if err := v.errorDef.Validate(obj["error"]); err != nil {
				return info, fmt.Errorf("error: %w", err)
			}
			return info, nil
		}
		if err := v.anyResult.Validate(obj["result"]); err != nil {
			return info, fmt.Errorf("result is none of ReadTextFileResponse, RequestPermissionResponse, WriteTextFileResponse: %w", err)
		}
		res, ok := obj["result"].(map[string]any)
		if !ok {
			return info, fmt.Errorf("result: got %T, want an object", obj["result"])
		}
		info.res = res
		// WriteTextFileResponse accepts any object, so the anyOf alone is
		// weak: pin the result to the def its identifying property names.
		for _, r := range resultDefs {
			if _, ok := res[r.key]; ok {
				info.result = r.def
				if err := v.results[r.def].Validate(res); err != nil {
					return info, fmt.Errorf("result as %s: %w", r.def, err)
				}
				return info, nil
			}
		}
		return info, fmt.Errorf("result %v answers no request this client serves (fs/read_text_file, session/request_permission)", res)
	}

	if err := json.Unmarshal(msg["method"], &info.method); err != nil {
		return info, fmt.Errorf("method: %w", err)
	}
	if notificationMethods[info.method] != (info.kind == "notification") {
		return info, fmt.Errorf("%s sent as a %s", info.method, info.kind)
	}
	sch, ok := v.params[info.method]
	if !ok {
		return info, fmt.Errorf("method %q: no schema def is mapped for it (unexpected method)", info.method)
	}
	params, ok := obj["params"].(map[string]any)
	if !ok {
		return info, fmt.Errorf("%s params: got %T, want an object", info.method, obj["params"])
	}
	info.params = params
	if err := sch.Validate(params); err != nil {
		return info, fmt.Errorf("%s params as %s: %w", info.method, paramsDefByMethod[info.method], err)
	}
	switch info.method {
	case "initialize":
		if got := fmt.Sprint(params["protocolVersion"]); got != "1" {
			return info, fmt.Errorf("initialize protocolVersion: got %s, want 1", got)
		}
	case "session/new", "session/load", "session/resume":
		servers, present := params["mcpServers"]
		if !present {
			return info, fmt.Errorf("%s: mcpServers missing, want an array", info.method)
		}
		if _, ok := servers.([]any); !ok {
			return info, fmt.Errorf("%s mcpServers: got %T (%v), want an array", info.method, servers, servers)
		}
	}
	return info, nil
}

// TestSchemaMethodMapping checks the method→def table against the schema's
// own x-method annotations, so a typo cannot make the test check the wrong def.
func TestSchemaMethodMapping(t *testing.T) {
	v := schemaValidator(t)
	for method, name := range paramsDefByMethod {
		t.Run(method, func(t *testing.T) {
			if got := v.rawDefs[name]["x-method"]; got != method {
				t.Errorf("$defs/%s x-method: got %v, want %q", name, got, method)
			}
			if got := v.rawDefs[name]["x-side"]; got != "agent" {
				t.Errorf("$defs/%s x-side: got %v, want \"agent\" (handled by the agent)", name, got)
			}
		})
	}
	for _, r := range resultDefs {
		t.Run(r.def, func(t *testing.T) {
			if got := v.rawDefs[r.def]["x-side"]; got != "client" {
				t.Errorf("$defs/%s x-side: got %v, want \"client\"", r.def, got)
			}
		})
	}
}

// TestSchemaValidatorRejects proves the validator can fail: each broken
// message must be rejected, while the valid control is accepted.
func TestSchemaValidatorRejects(t *testing.T) {
	v := schemaValidator(t)
	tests := []struct {
		name    string
		line    string
		wantErr bool
	}{
		{"valid session/new (control)", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`, false},
		{"valid prompt (control)", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`, false},
		{"valid cancel (control)", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`, false},
		{"valid permission answer (control)", `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, false},
		{"valid read answer (control)", `{"jsonrpc":"2.0","id":"x","result":{"content":"text"}}`, false},
		{"valid error answer (control)", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params"}}`, false},
		{"session/new with mcpServers null", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":null}}`, true},
		{"session/new without mcpServers", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp"}}`, true},
		{"session/new with a bogus MCP server", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"type":"http"}]}}`, true},
		{"session/load without sessionId", `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"cwd":"/tmp","mcpServers":[]}}`, true},
		{"session/resume with mcpServers null", `{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/tmp","mcpServers":null}}`, true},
		{"session/resume without mcpServers", `{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/tmp"}}`, true},
		{"prompt without sessionId", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"hi"}]}}`, true},
		{"prompt with a text block lacking text", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text"}]}}`, true},
		{"initialize with string protocolVersion", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1"}}`, true},
		{"initialize with protocolVersion 2", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}`, true},
		{"cancel without sessionId", `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, true},
		{"cancel sent as a request", `{"jsonrpc":"2.0","id":4,"method":"session/cancel","params":{"sessionId":"s"}}`, true},
		{"prompt sent as a notification", `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`, true},
		{"unmapped method", `{"jsonrpc":"2.0","id":5,"method":"session/frobnicate","params":{}}`, true},
		{"missing jsonrpc", `{"id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`, true},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`, true},
		{"selected outcome without optionId", `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected"}}}`, true},
		{"unknown outcome", `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"maybe"}}}`, true},
		{"read answer with non-string content", `{"jsonrpc":"2.0","id":0,"result":{"content":42}}`, true},
		{"response with both result and error", `{"jsonrpc":"2.0","id":0,"result":{"content":""},"error":{"code":1,"message":"x"}}`, true},
		{"error without message", `{"jsonrpc":"2.0","id":0,"error":{"code":-32603}}`, true},
		{"fractional request id", `{"jsonrpc":"2.0","id":1.5,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`, true},
		{"two values on one line", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}} {}`, true},
		{"not JSON", `session/cancel`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.validate([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Errorf("validate(%s): got error %v, want error: %v", tt.line, err, tt.wantErr)
			}
		})
	}
}

// TestConformance drives a realistic conversation with the demo agent over
// three process lifetimes and validates every line the daemon wrote against
// the official ACP schema.
func TestConformance(t *testing.T) {
	v := schemaValidator(t) // fail before spending time on the agent
	stateDir := t.TempDir()
	readme := "# conformance\nhello from the README\n"
	cwd := newCwd(t, readme)
	var recorders []*lineRecorder

	// --- first agent: new session and a few turns ---
	a := startDemoAgent(t, stateDir, cwd)
	recorders = append(recorders, a.out)
	caps := a.conn.Capabilities()
	if caps.ProtocolVersion != acp.ProtocolVersion || !caps.LoadSession || !caps.Resume || caps.AgentName != "tether-demo-agent" {
		t.Errorf("capabilities: got %+v, want protocol 1, loadSession, resume, agent tether-demo-agent", caps)
	}
	sid, err := a.conn.NewSession(callCtx(t), acp.SessionParams{Cwd: cwd})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}

	turn := func(text, wantStop string) []acp.Update {
		t.Helper()
		before := len(a.handler.Updates())
		stop, err := a.conn.Prompt(callCtx(t), sid, textPrompt(t, text))
		if err != nil {
			t.Fatalf("Prompt(%q): %v", text, err)
		}
		if stop != wantStop {
			t.Errorf("Prompt(%q) stopReason: got %q, want %q", text, stop, wantStop)
		}
		return a.handler.Updates()[before:]
	}

	// Plain text: plan, a read through our fs/read_text_file, chunks.
	ups := turn("hello conformance", "end_turn")
	if !hasToolStatus(ups, "completed") {
		t.Errorf("plain prompt: no completed tool call; got %s", describeUpdates(ups))
	}
	if got := agentText(ups); !strings.Contains(got, fmt.Sprintf("README.md (%d bytes)", len(readme))) {
		t.Errorf("plain prompt reply: got %q, want it to mention README.md (%d bytes)", got, len(readme))
	}

	// Permission granted, then cancelled.
	a.handler.script(acp.PermissionOutcome{OptionID: "allow_once"})
	ups = turn("/permission", "end_turn")
	if got := agentText(ups); !strings.Contains(got, "selected allow_once") {
		t.Errorf("/permission allow_once reply: got %q, want it to contain %q", got, "selected allow_once")
	}
	a.handler.script(acp.PermissionOutcome{Cancelled: true})
	ups = turn("/permission", "cancelled")
	if got := agentText(ups); !strings.Contains(got, "Permission outcome: cancelled") {
		t.Errorf("/permission cancelled reply: got %q, want it to contain %q", got, "Permission outcome: cancelled")
	}
	asked := a.handler.Asked()
	if len(asked) != 2 {
		t.Fatalf("permission requests: got %d, want 2", len(asked))
	}
	for i, req := range asked {
		var ids []string
		for _, o := range req.Options {
			ids = append(ids, o.ID)
		}
		if want := []string{"allow_once", "allow_always", "reject_once"}; !slices.Equal(ids, want) || req.SessionID != sid {
			t.Errorf("permission request %d: got session %q options %v, want session %q options %v", i, req.SessionID, ids, sid, want)
		}
	}

	// /hang until session/cancel.
	type result struct {
		stop string
		err  error
	}
	hung := make(chan result, 1)
	hangCtx, hangPrompt := callCtx(t), textPrompt(t, "/hang")
	go func() {
		stop, err := a.conn.Prompt(hangCtx, sid, hangPrompt)
		hung <- result{stop, err}
	}()
	a.handler.waitForUpdate(t, "hanging…", func(u acp.Update) bool {
		return u.Kind == acp.UpdateAgentMessage && strings.HasPrefix(u.Text, "hanging")
	})
	if err := a.conn.Cancel(callCtx(t), sid); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if r := <-hung; r.err != nil || r.stop != "cancelled" {
		t.Errorf("Prompt(/hang) after Cancel: got (%q, %v), want (\"cancelled\", nil)", r.stop, r.err)
	}

	// An unknown sessionUpdate kind must not reach the Handler.
	ups = turn("/unknown-update", "end_turn")
	if got := agentText(ups); got != "sent an unknown update" {
		t.Errorf("/unknown-update reply: got %q, want %q", got, "sent an unknown update")
	}
	assertKnownKinds(t, "first agent", a.handler.Updates())
	a.conn.Stop()
	firstUpdates := a.handler.Updates()

	// --- second agent: session/load replays history before answering ---
	b := startDemoAgent(t, stateDir, cwd)
	recorders = append(recorders, b.out)
	if n := len(b.handler.Updates()); n != 0 {
		t.Fatalf("updates before LoadSession: got %d, want 0", n)
	}
	// "null" must be sent as [] (the daemon never sends mcpServers: null).
	if err := b.conn.LoadSession(callCtx(t), sid, acp.SessionParams{Cwd: cwd, MCPServers: json.RawMessage("null")}); err != nil {
		t.Fatalf("LoadSession: %v", err)
	}
	replayed := b.handler.Updates() // snapshot taken right as LoadSession returned
	var userTexts []string
	for _, u := range replayed {
		if u.SessionID != sid {
			t.Errorf("replayed update for session %q, want %q", u.SessionID, sid)
		}
		if u.Kind == acp.UpdateUserMessage {
			userTexts = append(userTexts, u.Text)
		}
	}
	wantUser := []string{"hello conformance", "/permission", "/permission", "/hang", "/unknown-update"}
	if !slices.Equal(userTexts, wantUser) {
		t.Errorf("replayed user messages when LoadSession returned: got %q, want %q", userTexts, wantUser)
	}
	if got, want := agentText(replayed), agentText(firstUpdates); got != want {
		t.Errorf("replayed agent text: got %q, want %q (what the first agent sent)", got, want)
	}
	assertKnownKinds(t, "second agent (replay)", replayed)
	b.conn.Stop()

	// --- third agent: session/resume, no replay, then one more turn ---
	c := startDemoAgent(t, stateDir, cwd)
	recorders = append(recorders, c.out)
	// A non-empty list: the SDK omits an empty one on resume (see
	// TestSessionParamsOnWire), and this also validates an McpServer.
	if err := c.conn.ResumeSession(callCtx(t), sid, acp.SessionParams{Cwd: cwd, MCPServers: json.RawMessage(stdioServer)}); err != nil {
		t.Fatalf("ResumeSession: %v", err)
	}
	if n := len(c.handler.Updates()); n != 0 {
		t.Errorf("updates after ResumeSession: got %d (%s), want 0 (resume does not replay)", n, describeUpdates(c.handler.Updates()))
	}
	stop, err := c.conn.Prompt(callCtx(t), sid, textPrompt(t, "/echo resumed"))
	if err != nil || stop != "end_turn" {
		t.Fatalf("Prompt(/echo resumed) after resume: got (%q, %v), want (\"end_turn\", nil)", stop, err)
	}
	if got := agentText(c.handler.Updates()); got != "resumed" {
		t.Errorf("/echo after resume: got %q, want %q", got, "resumed")
	}
	c.conn.Stop()

	// --- every line the daemon wrote, against the schema ---
	seen := map[string]int{}
	var permissionOutcomes []string
	var readContents []string
	for ri, rec := range recorders {
		lines, partial := rec.Lines()
		if len(partial) != 0 {
			t.Errorf("agent %d: trailing bytes without newline: %q", ri+1, partial)
		}
		for li, line := range lines {
			info, err := v.validate(line)
			if err != nil {
				t.Errorf("agent %d line %d: %v\n  %s", ri+1, li+1, err, line)
				continue
			}
			switch info.kind {
			case "response":
				seen["response:"+info.result]++
				switch info.result {
				case "RequestPermissionResponse":
					o, _ := info.res["outcome"].(map[string]any)
					permissionOutcomes = append(permissionOutcomes, fmt.Sprint(o["outcome"], "/", o["optionId"]))
				case "ReadTextFileResponse":
					readContents = append(readContents, fmt.Sprint(info.res["content"]))
				}
			default:
				seen[info.kind+":"+info.method]++
			}
		}
	}
	wantSeen := map[string]int{
		"request:initialize":                 3,
		"request:session/new":                1,
		"request:session/load":               1,
		"request:session/resume":             1,
		"request:session/prompt":             6,
		"notification:session/cancel":        1,
		"response:ReadTextFileResponse":      1,
		"response:RequestPermissionResponse": 2,
	}
	for k, want := range wantSeen {
		if seen[k] != want {
			t.Errorf("lines of kind %s: got %d, want %d", k, seen[k], want)
		}
	}
	for k, n := range seen {
		if _, ok := wantSeen[k]; !ok {
			t.Errorf("unexpected lines of kind %s: got %d, want 0", k, n)
		}
	}
	if want := []string{"selected/allow_once", "cancelled/<nil>"}; !slices.Equal(permissionOutcomes, want) {
		t.Errorf("permission answers on the wire: got %q, want %q", permissionOutcomes, want)
	}
	if want := []string{readme}; !slices.Equal(readContents, want) {
		t.Errorf("fs/read_text_file answers on the wire: got %q, want %q", readContents, want)
	}
}

// stdioServer is a complete stdio MCP server entry as the daemon stores it.
const stdioServer = `[{"name":"files","command":"/usr/bin/mcp-files","args":["--root","/"],"env":[{"name":"LOG","value":"1"}]}]`

// TestSessionParamsOnWire checks how SessionParams.MCPServers reaches the
// wire in session/new, session/load and session/resume: always a
// schema-valid array, never null, never missing.
func TestSessionParamsOnWire(t *testing.T) {
	v := schemaValidator(t)
	cwd := newCwd(t, "params\n")
	a := startDemoAgent(t, t.TempDir(), cwd)
	tests := []struct {
		name    string
		servers json.RawMessage
		want    string // mcpServers as sent, compact JSON
	}{
		{name: "nil", servers: nil, want: `[]`},
		{name: "null", servers: json.RawMessage(`null`), want: `[]`},
		{name: "empty array", servers: json.RawMessage(`[]`), want: `[]`},
		{name: "stdio server", servers: json.RawMessage(stdioServer), want: stdioServer},
		{name: "http server", servers: json.RawMessage(`[{"type":"http","name":"web","url":"https://mcp.example/x","headers":[]}]`),
			want: `[{"headers":[],"name":"web","type":"http","url":"https://mcp.example/x"}]`},
		{name: "stdio server without args and env", servers: json.RawMessage(`[{"name":"files","command":"/usr/bin/mcp-files"}]`),
			want: `[{"args":[],"command":"/usr/bin/mcp-files","env":[],"name":"files"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := acp.SessionParams{Cwd: cwd, MCPServers: tt.servers}
			lines, _ := a.out.Lines()
			from := len(lines)
			sid, err := a.conn.NewSession(callCtx(t), p)
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			if err := a.conn.LoadSession(callCtx(t), sid, p); err != nil {
				t.Fatalf("LoadSession: %v", err)
			}
			if err := a.conn.ResumeSession(callCtx(t), sid, p); err != nil {
				t.Fatalf("ResumeSession: %v", err)
			}
			lines, _ = a.out.Lines()
			sent := map[string][]byte{}
			for _, line := range lines[from:] {
				var m struct {
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(line, &m); err == nil && m.Method != "" {
					sent[m.Method] = line
				}
			}
			for _, method := range []string{"session/new", "session/load", "session/resume"} {
				line, ok := sent[method]
				if !ok {
					t.Errorf("%s: not sent", method)
					continue
				}
				var problems []string
				if _, err := v.validate(line); err != nil {
					problems = append(problems, err.Error())
				}
				var m struct {
					Params map[string]json.RawMessage `json:"params"`
				}
				_ = json.Unmarshal(line, &m)
				if got, want := compactJSON(m.Params["mcpServers"]), compactJSON(json.RawMessage(tt.want)); got != want {
					problems = append(problems, fmt.Sprintf("mcpServers: got %s, want %s", got, want))
				}
				if len(problems) > 0 {
					t.Errorf("%s: %s\n  %s", method, strings.Join(problems, "; "), line)
				}
			}
		})
	}
	t.Run("invalid JSON is refused before sending", func(t *testing.T) {
		lines, _ := a.out.Lines()
		_, err := a.conn.NewSession(callCtx(t), acp.SessionParams{Cwd: cwd, MCPServers: json.RawMessage(`{"name":"x"}`)})
		if err == nil {
			t.Errorf("NewSession with mcpServers object: got nil error, want one")
		}
		if after, _ := a.out.Lines(); len(after) != len(lines) {
			t.Errorf("lines sent: got %d, want 0", len(after)-len(lines))
		}
	})
}

func compactJSON(b json.RawMessage) string {
	if len(b) == 0 {
		return "<missing>"
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v) // map keys sorted
	return string(out)
}

// knownKinds are the update kinds the package translates.
var knownKinds = map[acp.UpdateKind]bool{
	acp.UpdateUserMessage: true, acp.UpdateAgentMessage: true, acp.UpdateAgentThought: true,
	acp.UpdateToolCall: true, acp.UpdateToolCallUpdate: true, acp.UpdatePlan: true,
	acp.UpdateAvailableCommands: true, acp.UpdateCurrentMode: true, acp.UpdateConfigOptions: true,
	acp.UpdateSessionInfo: true, acp.UpdateUsage: true,
}

func assertKnownKinds(t *testing.T, who string, ups []acp.Update) {
	t.Helper()
	for i, u := range ups {
		if !knownKinds[u.Kind] {
			t.Errorf("%s: update %d has kind %q, want only known kinds (unknown ones must be dropped)", who, i, u.Kind)
		}
		// The demo agent sends neither of these kinds, so seeing one means
		// the unknown update (only sessionUpdate and note) was misfiled.
		if u.Kind == acp.UpdateSessionInfo || u.Kind == acp.UpdateUsage {
			t.Errorf("%s: update %d: got kind %s with %s, want none (an unknown kind misfiled?)", who, i, u.Kind, u.Data)
		}
	}
}

// agentText concatenates the agent message chunks.
func agentText(ups []acp.Update) string {
	var sb strings.Builder
	for _, u := range ups {
		if u.Kind == acp.UpdateAgentMessage {
			sb.WriteString(u.Text)
		}
	}
	return sb.String()
}

// hasToolStatus reports whether some tool call reached status.
func hasToolStatus(ups []acp.Update, status string) bool {
	for _, u := range ups {
		if u.Tool != nil && u.Tool.Status != nil && *u.Tool.Status == status {
			return true
		}
	}
	return false
}
