package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Fingerprint identifies how the profile launches and authenticates its
// agent (command, arguments, environment, passthrough, auth method): a
// failure that depends on the configuration, such as missing credentials,
// is worth trying again only once the fingerprint changes. Env values are
// hashed, never kept.
func (p Profile) Fingerprint() string {
	b, err := json.Marshal(struct {
		Command, AuthMethod string
		Args, ResumeArgs    []string
		Env                 map[string]string
		EnvPassthrough      []string
	}{p.Command, p.AuthMethod, p.Args, p.ResumeArgs, p.Env, p.EnvPassthrough})
	if err != nil {
		panic(err) // plain values only
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
