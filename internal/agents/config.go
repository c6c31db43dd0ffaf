package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/session"
)

// configFileNames are the default config file names in the data directory,
// in the order they are looked for.
var configFileNames = []string{"agents.yaml", "agents.yml", "agents.json"}

// idPattern is what a profile id may look like: it appears in URLs, logs and
// the database, so it is kept to a safe, lower-case alphabet.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// entryKeys are the keys an agent entry may have; anything else is rejected
// so a typo ("histroyContextInjection") never silently changes behaviour.
var entryKeys = []string{"id", "displayName", "command", "args", "env", "envPassthrough", "historyContextInjection", "resumeArgs", "maxAgents", "authMethod", "mcpServers", "executor", "autoContinue", "sandbox", "budget"}

// fileEntry is one agent as written in the config file.
type fileEntry struct {
	ID          string            `yaml:"id"`
	DisplayName string            `yaml:"displayName"`
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args"`
	Env         map[string]string `yaml:"env"`
	// EnvPassthrough names variables of the daemon's environment the agent
	// also gets (API keys kept in the user's shell).
	EnvPassthrough []string `yaml:"envPassthrough"`
	// HistoryContextInjection is a pointer so that "absent" means the
	// default (true) rather than false.
	HistoryContextInjection *bool    `yaml:"historyContextInjection"`
	ResumeArgs              []string `yaml:"resumeArgs"`
	// MaxAgents caps the profile's live agents; 0 or absent: no own cap.
	MaxAgents int `yaml:"maxAgents"`
	// AuthMethod names one of the agent's announced auth methods; tetherd
	// calls ACP authenticate with it after initialize.
	AuthMethod string `yaml:"authMethod"`
	// Executor is where the profile's sessions run unless a session asks
	// otherwise: standalone, detached or a remote host's name.
	Executor string `yaml:"executor"`
	// AutoContinue opts the profile's sessions in to safe automatic
	// continuation.
	AutoContinue bool `yaml:"autoContinue"`
	// MCPServers is validated from the node (see mcp.go), never decoded
	// directly; mcp is the ACP JSON array it becomes.
	MCPServers yaml.Node `yaml:"mcpServers"`
	mcp        json.RawMessage
	// Sandbox is the profile's sandbox policy (internal/sandbox).
	Sandbox *sandboxEntry `yaml:"sandbox"`
	// Budget is what the profile's sessions may use, and their stall
	// watchdog (session.Budget).
	Budget *budgetEntry `yaml:"budget"`
}

// budgetEntry is agents.yaml's budget mapping (session.Budget's members,
// by the same names).
type budgetEntry struct {
	MaxTokens int64 `yaml:"maxTokens"`
	MaxCost   *struct {
		Amount   float64 `yaml:"amount"`
		Currency string  `yaml:"currency"`
	} `yaml:"maxCost"`
	MaxTurnSeconds int64 `yaml:"maxTurnSeconds"`
	StallSeconds   int64 `yaml:"stallSeconds"`
}

// budgetKeys are the keys a budget mapping may have.
var budgetKeys = []string{"maxTokens", "maxCost", "maxTurnSeconds", "stallSeconds"}

func (e *budgetEntry) budget() session.Budget {
	if e == nil {
		return session.Budget{}
	}
	b := session.Budget{MaxTokens: e.MaxTokens, MaxTurnSeconds: e.MaxTurnSeconds, StallSeconds: e.StallSeconds}
	if c := e.MaxCost; c != nil {
		b.MaxCost = &session.Cost{Amount: c.Amount, Currency: c.Currency}
	}
	return b
}

// sandboxEntry is agents.yaml's sandbox mapping; a list left out (not
// written) stays nil, so the defaults apply to it.
type sandboxEntry struct {
	Mode     string   `yaml:"mode"`
	Network  string   `yaml:"network"`
	Writable []string `yaml:"writable"`
	Readable []string `yaml:"readable"`
	Ports    []int    `yaml:"ports"`
}

// sandboxKeys are the keys a sandbox mapping may have.
var sandboxKeys = []string{"mode", "network", "writable", "readable", "ports"}

func (e *sandboxEntry) policy() sandbox.Policy {
	if e == nil {
		return sandbox.Policy{}
	}
	return sandbox.Policy{Mode: e.Mode, Network: e.Network, Writable: e.Writable, Readable: e.Readable, Ports: e.Ports}
}

// profile turns a validated entry into a profile. The entry replaces any
// built-in or detected profile of the same id entirely: merging half a
// command line from two places would be hard to reason about.
func (e fileEntry) profile(lookPath func(string) (string, error)) Profile {
	p := Profile{
		ID:                      e.ID,
		DisplayName:             e.DisplayName,
		Args:                    e.Args,
		Env:                     e.Env,
		EnvPassthrough:          e.EnvPassthrough,
		Source:                  SourceConfig,
		HistoryContextInjection: true,
		ResumeArgs:              e.ResumeArgs,
		MaxAgents:               e.MaxAgents,
		AuthMethod:              e.AuthMethod,
		Executor:                e.Executor,
		AutoContinue:            e.AutoContinue,
		MCPServers:              e.mcp,
		Sandbox:                 e.Sandbox.policy().Defaults(),
		Budget:                  e.Budget.budget(),
	}
	if p.DisplayName == "" {
		p.DisplayName = e.ID
	}
	if e.HistoryContextInjection != nil {
		p.HistoryContextInjection = *e.HistoryContextInjection
	}
	p.Command, p.Available, p.UnavailableReason = resolveCommand(e.Command, lookPath)
	return p
}

// configPath picks the config file: the explicit one, else the first
// default name that exists in the data directory. Two default files at once
// is an error, because silently ignoring one of them would surprise whoever
// edited it.
func configPath(cfg Config) (string, error) {
	if cfg.ConfigPath != "" {
		return cfg.ConfigPath, nil
	}
	if cfg.DataDir == "" {
		return "", nil
	}
	var found []string
	for _, name := range configFileNames {
		p := filepath.Join(cfg.DataDir, name)
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return filepath.Join(cfg.DataDir, configFileNames[0]), nil
	case 1:
		return found[0], nil
	default:
		return "", errcode.New(errcode.InvalidRequest, "several agent config files exist (%s); keep only one", strings.Join(found, ", "))
	}
}

// readConfigFile reads and validates the config file. A missing file yields
// no entries; any problem in an existing file is an error naming the file and
// line, and every problem is reported at once so they can be fixed together.
func readConfigFile(path string) (entries []fileEntry, found bool, err error) {
	if path == "" {
		return nil, false, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("agents: read config: %w", err)
	}
	entries, errs := parseConfig(path, data)
	if len(errs) > 0 {
		return nil, true, errcode.Wrap(errcode.InvalidRequest, errors.Join(errs...), "invalid agent config")
	}
	return entries, true, nil
}

// parseConfig parses YAML, or JSON when the file name ends in .json, into
// validated entries. Both go through a yaml.Node tree so that every error,
// including validation errors, carries a line number.
func parseConfig(path string, data []byte) ([]fileEntry, []error) {
	var root *yaml.Node
	var err error
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		root, err = jsonToNode(data)
	} else {
		root, err = yamlToNode(data)
	}
	if err != nil {
		return nil, []error{located(path, err)}
	}
	v := validator{path: path}
	entries := v.document(root)
	return entries, v.errs
}

// yamlToNode parses a single YAML document.
func yamlToNode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, &lineError{line: extra.Line, msg: "only one YAML document is allowed; list every agent under one \"agents\" key"}
	}
	return &doc, nil
}

// lineError is a problem at a known line of the config file.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// yamlLine matches yaml.v3's "yaml: line N: msg" and TypeError's "line N: msg".
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// located rewrites a parse error as "file:line: message", the form editors
// and terminals make clickable.
func located(path string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %s", path, le.line, le.msg)
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s", path, m[1], m[2])
	}
	return fmt.Errorf("%s: %s", path, strings.TrimPrefix(msg, "yaml: "))
}

// validator walks the parsed document, collecting every error.
type validator struct {
	path string
	errs []error
}

func (v *validator) fail(line int, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s:%d: %s", v.path, line, fmt.Sprintf(format, args...)))
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// document validates the top level: a mapping whose only key is "agents".
func (v *validator) document(root *yaml.Node) []fileEntry {
	n := deref(root)
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = deref(n.Content[0])
	}
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		v.fail(n.Line, "the top level must be a mapping with an \"agents\" list")
		return nil
	}
	var list *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch k.Value {
		case "agents":
			if list != nil {
				v.fail(k.Line, "duplicate key \"agents\"")
				continue
			}
			list = deref(n.Content[i+1])
		default:
			v.fail(k.Line, "unknown key %q at the top level (known keys: agents)", k.Value)
		}
	}
	if isNull(list) {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		v.fail(list.Line, "\"agents\" must be a list")
		return nil
	}
	var out []fileEntry
	firstLine := map[string]int{}
	for i, item := range list.Content {
		e, ok := v.entry(fmt.Sprintf("agents[%d]", i), deref(item))
		if !ok {
			continue
		}
		if prev, dup := firstLine[e.ID]; dup {
			v.fail(item.Line, "agents[%d]: duplicate id %q (first defined at line %d)", i, e.ID, prev)
			continue
		}
		firstLine[e.ID] = item.Line
		out = append(out, e)
	}
	return out
}

// entry validates and decodes one agent entry.
func (v *validator) entry(where string, n *yaml.Node) (fileEntry, bool) {
	if n == nil || n.Kind != yaml.MappingNode {
		line := 0
		if n != nil {
			line = n.Line
		}
		v.fail(line, "%s must be a mapping with at least id and command", where)
		return fileEntry{}, false
	}
	before := len(v.errs)
	values := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, dup := values[k.Value]; dup {
			v.fail(k.Line, "%s: duplicate key %q", where, k.Value)
			continue
		}
		values[k.Value] = n.Content[i+1]
		if !knownKey(k.Value) {
			hint := ""
			if s := suggestKey(k.Value); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			v.fail(k.Line, "%s: unknown key %q%s (known keys: %s)", where, k.Value, hint, strings.Join(entryKeys, ", "))
		}
	}
	if len(v.errs) > before {
		return fileEntry{}, false
	}
	var e fileEntry
	if err := n.Decode(&e); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, msg := range te.Errors {
				if m := yamlLine.FindStringSubmatch(msg); m != nil {
					v.errs = append(v.errs, fmt.Errorf("%s:%s: %s: %s", v.path, m[1], where, m[2]))
				} else {
					v.fail(n.Line, "%s: %s", where, msg)
				}
			}
		} else {
			v.fail(n.Line, "%s: %v", where, err)
		}
		return fileEntry{}, false
	}
	lineOf := func(key string) int {
		if vn, ok := values[key]; ok {
			return vn.Line
		}
		return n.Line
	}

	switch {
	case e.ID == "":
		v.fail(n.Line, "%s: id is required", where)
	case !idPattern.MatchString(e.ID):
		v.fail(lineOf("id"), "%s: invalid id %q: use 1-64 characters from a-z, 0-9, '-' and '_', starting with a letter or digit", where, e.ID)
	default:
		where = fmt.Sprintf("%s (id %q)", where, e.ID)
	}

	switch cmd := e.Command; {
	case strings.TrimSpace(cmd) == "":
		v.fail(lineOf("command"), "%s: command is required", where)
	case strings.ContainsRune(cmd, 0):
		v.fail(lineOf("command"), "%s: command contains a NUL byte", where)
	case strings.HasPrefix(cmd, "~/"):
		// Expanded here, once, so the profile shows the path that runs.
		home, err := os.UserHomeDir()
		if err != nil {
			v.fail(lineOf("command"), "%s: cannot expand ~ in command: %v", where, err)
			break
		}
		e.Command = filepath.Join(home, cmd[2:])
	case !filepath.IsAbs(cmd) && strings.ContainsRune(cmd, filepath.Separator):
		// A relative path would depend on the daemon's working directory.
		v.fail(lineOf("command"), "%s: command %q must be an absolute path or a bare name looked up on PATH", where, cmd)
	}

	for _, list := range []struct {
		key  string
		args []string
	}{{"args", e.Args}, {"resumeArgs", e.ResumeArgs}} {
		for i, a := range list.args {
			if strings.ContainsRune(a, 0) {
				v.fail(lineOf(list.key), "%s: %s[%d] contains a NUL byte", where, list.key, i)
			}
		}
	}
	for k, val := range e.Env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			v.fail(lineOf("env"), "%s: invalid environment variable name %q", where, k)
		case strings.ContainsRune(val, 0):
			v.fail(lineOf("env"), "%s: environment variable %s contains a NUL byte", where, k)
		}
	}
	for i, name := range e.EnvPassthrough {
		if err := acp.CheckPassthrough(name); err != nil {
			v.fail(lineOf("envPassthrough"), "%s: envPassthrough[%d]: %v", where, i, err)
		}
	}
	if e.MaxAgents < 0 {
		v.fail(lineOf("maxAgents"), "%s: maxAgents must be 0 (no own cap) or more, got %d", where, e.MaxAgents)
	}
	e.mcp = v.mcpServers(where, values["mcpServers"])
	if sb := deref(values["sandbox"]); sb != nil {
		v.sandbox(where, sb, e.Sandbox)
	}
	if b := deref(values["budget"]); b != nil {
		v.budget(where, b, e.Budget)
	}
	e.DisplayName = strings.TrimSpace(e.DisplayName)
	return e, len(v.errs) == before
}

// sandbox checks an entry's sandbox mapping: known keys only, valid
// values (sandbox.Policy.Check).
func (v *validator) sandbox(where string, n *yaml.Node, e *sandboxEntry) {
	if n.Kind != yaml.MappingNode {
		v.fail(n.Line, "%s: sandbox must be a mapping (keys: %s)", where, strings.Join(sandboxKeys, ", "))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(sandboxKeys, k.Value) {
			v.fail(k.Line, "%s: unknown key %q in sandbox (known keys: %s)", where, k.Value, strings.Join(sandboxKeys, ", "))
		}
	}
	if err := e.policy().Check(); err != nil {
		v.fail(n.Line, "%s: %v", where, err)
	}
}

// budget checks an entry's budget mapping: known keys only, valid
// values (session.Budget.Check).
func (v *validator) budget(where string, n *yaml.Node, e *budgetEntry) {
	if n.Kind != yaml.MappingNode {
		v.fail(n.Line, "%s: budget must be a mapping (keys: %s)", where, strings.Join(budgetKeys, ", "))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(budgetKeys, k.Value) {
			v.fail(k.Line, "%s: unknown key %q in budget (known keys: %s)", where, k.Value, strings.Join(budgetKeys, ", "))
		}
	}
	if err := e.budget().Check(); err != nil {
		v.fail(n.Line, "%s: %v", where, err)
	}
}

func knownKey(k string) bool {
	for _, known := range entryKeys {
		if k == known {
			return true
		}
	}
	return false
}

// suggestKey maps common misspellings (snake_case, kebab-case, wrong case)
// to the real key.
func suggestKey(k string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, known := range entryKeys {
		if norm(k) == norm(known) {
			return known
		}
	}
	return ""
}

// jsonToNode converts JSON to a yaml.Node tree carrying line numbers, so a
// JSON config gets the same validation and messages as YAML. (yaml.v3 cannot
// parse all JSON directly: it rejects the "\/" escape, for one.)
func jsonToNode(data []byte) (*yaml.Node, error) {
	j := jsonReader{dec: json.NewDecoder(bytes.NewReader(data)), data: data}
	j.dec.UseNumber()
	n, err := j.value()
	if err != nil {
		return nil, err
	}
	if _, err := j.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &lineError{line: j.line(), msg: "unexpected data after the top-level JSON value"}
	}
	return n, nil
}

type jsonReader struct {
	dec  *json.Decoder
	data []byte
}

// line is the line of the last token read.
func (j *jsonReader) line() int {
	return lineAt(j.data, j.dec.InputOffset()-1)
}

func lineAt(data []byte, off int64) int {
	off = max(0, min(off, int64(len(data))))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func (j *jsonReader) fail(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &lineError{line: lineAt(j.data, se.Offset-1), msg: se.Error()}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &lineError{line: lineAt(j.data, int64(len(j.data))), msg: "unexpected end of JSON input"}
	}
	return err
}

func (j *jsonReader) value() (*yaml.Node, error) {
	tok, err := j.dec.Token()
	if err != nil {
		return nil, j.fail(err)
	}
	line := j.line()
	scalar := func(tag, value string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value, Line: line}
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
			for j.dec.More() {
				kt, err := j.dec.Token()
				if err != nil {
					return nil, j.fail(err)
				}
				key, _ := kt.(string) // the decoder guarantees a string key here
				kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: j.line()}
				vn, err := j.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, kn, vn)
			}
			if _, err := j.dec.Token(); err != nil { // '}'
				return nil, j.fail(err)
			}
			return n, nil
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: line}
			for j.dec.More() {
				vn, err := j.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, vn)
			}
			if _, err := j.dec.Token(); err != nil { // ']'
				return nil, j.fail(err)
			}
			return n, nil
		}
		return nil, &lineError{line: line, msg: fmt.Sprintf("unexpected %q", t)}
	case string:
		return scalar("!!str", t), nil
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			return scalar("!!float", string(t)), nil
		}
		return scalar("!!int", string(t)), nil
	case bool:
		if t {
			return scalar("!!bool", "true"), nil
		}
		return scalar("!!bool", "false"), nil
	case nil:
		return scalar("!!null", "null"), nil
	}
	return nil, &lineError{line: line, msg: fmt.Sprintf("unexpected JSON token %v", tok)}
}
