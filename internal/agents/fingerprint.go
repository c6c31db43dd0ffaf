package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/tether/tether/internal/acp"
)

// Fingerprint identifies how the registry launches and authenticates the
// profile's agent: command, arguments, auth method and the whole
// environment the agent gets (the daemon's allow-list, the passthrough
// variables with the values they have in this process, the profile's env).
// A failure that depends on the configuration, such as missing
// credentials, is worth trying again only once the fingerprint changes:
// setting a key in agents.yaml, or in the daemon's environment for a
// passthrough variable, changes it. Only a hash is kept, never a value. ""
// for an unknown or unavailable profile.
func (r *Registry) Fingerprint(id string) string {
	spec, p, err := r.Spec(id)
	if err != nil {
		return ""
	}
	env := acp.Environ(spec)
	slices.Sort(env)
	b, err := json.Marshal(struct {
		Command, AuthMethod string
		Args, ResumeArgs    []string
		Env                 []string
	}{spec.Command, spec.AuthMethod, spec.Args, p.ResumeArgs, env})
	if err != nil {
		panic(err) // plain values only
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// ConfigEdited reports whether the agent config file changed since the
// registry read it: the daemon's profiles are then not what a detached or
// remote executor host, which reads the file again at every agent start,
// runs (the daemon itself reads it only at start-up).
func (r *Registry) ConfigEdited() bool {
	return configDigest(r.configPath) != r.configDigest
}

// configDigest identifies the config file's content: a hash, "" when it
// does not exist (or no path), "unreadable" when it cannot be read.
func configDigest(path string) string {
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return "unreadable"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
