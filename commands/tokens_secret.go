package commands

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
)

// A token secret is 32 random bytes in hex behind the prefix "cvn_", so secret
// scanners and people can tell a leaked civnode token from any other hex string.
// A token id is "tok_" and 12 hex digits: it names the token in audit entries and
// URLs and is not secret.
const (
	SecretPrefix  = "cvn_"
	TokenIDPrefix = "tok_"
	secretBytes   = 32
	tokenIDBytes  = 6
)

var tokenIDPattern = regexp.MustCompile(`^tok_[0-9a-f]{12}$`)

func validTokenID(id string) bool { return tokenIDPattern.MatchString(id) }

// newTokenSecret returns a fresh secret and the hex of its SHA-256 digest, which is
// all that is ever stored.
func newTokenSecret() (secret, digest string, err error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("generate token secret: %w", err)
	}
	secret = SecretPrefix + hex.EncodeToString(b)
	d := sha256.Sum256([]byte(secret))
	return secret, hex.EncodeToString(d[:]), nil
}

func newTokenID() (string, error) {
	b := make([]byte, tokenIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token id: %w", err)
	}
	return TokenIDPrefix + hex.EncodeToString(b), nil
}
