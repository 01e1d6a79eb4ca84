package datadir

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/civnode/civnode/internal/atomicfile"
	"github.com/civnode/civnode/internal/logkey"
)

// PEMType is the PEM block type of node.key: PKCS#8.
const PEMType = "PRIVATE KEY"

// ServeNodeKey returns the node key of d for serve, creating one on first
// start. A missing key beside an existing chain is refused and nothing is
// created: a new key cannot continue a chain that another key signed, and
// making one would hide that the real key is lost.
func (d Dir) ServeNodeKey(logger *slog.Logger) (ed25519.PrivateKey, error) {
	key, err := LoadNodeKey(d.KeyPath(), logger)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := d.RefuseLostKey(); err != nil {
		return nil, err
	}
	return LoadOrCreateNodeKey(d.KeyPath(), logger)
}

// LoadOrCreateNodeKey returns the node key at path, creating one on first start.
func LoadOrCreateNodeKey(path string, logger *slog.Logger) (ed25519.PrivateKey, error) {
	key, err := LoadNodeKey(path, logger)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	_, key, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate node key: %w", err)
	}
	err = WriteNodeKey(path, key)
	if errors.Is(err, fs.ErrExist) {
		return LoadNodeKey(path, logger) // another first start won the race
	}
	if err != nil {
		return nil, err
	}
	logger.Info("created node key", logkey.Path, path)
	return key, nil
}

// WriteNodeKey writes key to path as PKCS#8 PEM with mode 0600, unless path
// exists (an error matching fs.ErrExist): a node key is never overwritten.
func WriteNodeKey(path string, key ed25519.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode node key: %w", err)
	}
	err = atomicfile.Create(path, pem.EncodeToMemory(&pem.Block{Type: PEMType, Bytes: der}), secretMode)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("write node key: %w", err)
	}
	return err
}

// LoadNodeKey reads an Ed25519 private key in PKCS#8 PEM. A missing file is
// reported as fs.ErrNotExist.
func LoadNodeKey(path string, logger *slog.Logger) (ed25519.PrivateKey, error) {
	b, err := ReadSecret(path, logger)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read node key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != PEMType {
		return nil, fmt.Errorf("node key %s: want a PEM %q block", path, PEMType)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("node key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("node key %s: want an Ed25519 key, found %T", path, k)
	}
	return key, nil
}
