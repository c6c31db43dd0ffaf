package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// secretPrefix starts a Standard Webhooks secret: whsec_ and the key in
// base64.
const secretPrefix = "whsec_"

// NewSecret makes a secret of 32 random bytes.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand does not fail
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// CheckSecret refuses a secret that is not whsec_ and the base64 of 24
// to 64 bytes (errcode.ValidationFailed).
func CheckSecret(s string) error {
	key, err := keyOf(s)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return errcode.New(errcode.ValidationFailed, "secret must be whsec_ and the base64 of 24 to 64 random bytes").With("field", "secret")
	}
	return nil
}

func keyOf(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errcode.New(errcode.ValidationFailed, "not a whsec_ secret")
	}
	return base64.StdEncoding.DecodeString(rest)
}

// Sign is the webhook-signature header of a message sent at timestamp
// (unix seconds): v1, and the base64 HMAC-SHA256 of "id.timestamp.body"
// keyed with the secret's bytes (Standard Webhooks).
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := keyOf(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
