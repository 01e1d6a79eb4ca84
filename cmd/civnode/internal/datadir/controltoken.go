package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/civnode/civnode/internal/atomicfile"
	"github.com/civnode/civnode/internal/logkey"
)

// LoadOrCreateControlToken returns the owner token at path (docs/tokens.md),
// creating one on first start: 32 random bytes as hex, then a newline.
func LoadOrCreateControlToken(path string, logger *slog.Logger) (string, error) {
	tok, err := LoadControlToken(path, logger)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate control token: %w", err)
	}
	tok = hex.EncodeToString(b)
	err = atomicfile.Create(path, []byte(tok+"\n"), secretMode)
	if errors.Is(err, fs.ErrExist) {
		return LoadControlToken(path, logger) // another first start won the race
	}
	if err != nil {
		return "", fmt.Errorf("write control token: %w", err)
	}
	logger.Info("created control token", logkey.Path, path)
	return tok, nil
}

// LoadControlToken reads the owner token. Surrounding white space is ignored so
// that an operator may edit the file; a missing file is fs.ErrNotExist.
func LoadControlToken(path string, logger *slog.Logger) (string, error) {
	b, err := ReadSecret(path, logger)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("read control token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("control token %s: want one non-empty line", path)
	}
	return tok, nil
}
