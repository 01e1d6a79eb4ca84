package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
)

const pemPrivateKey = "PRIVATE KEY"

// serveNodeKey returns the node key of d for serve, creating one on first
// start. A missing key beside an existing chain is refused and nothing is
// created: a new key cannot continue a chain that another key signed, and
// making one would hide that the real key is lost.
func (d dataDir) serveNodeKey(logger *slog.Logger) (ed25519.PrivateKey, error) {
	key, err := loadNodeKey(d.keyPath(), logger)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := d.refuseLostKey(); err != nil {
		return nil, err
	}
	return loadOrCreateNodeKey(d.keyPath(), logger)
}

// loadOrCreateNodeKey returns the node key at path, creating one on first start.
func loadOrCreateNodeKey(path string, logger *slog.Logger) (ed25519.PrivateKey, error) {
	key, err := loadNodeKey(path, logger)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	_, key, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate node key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode node key: %w", err)
	}
	err = writeSecretFile(path, pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}))
	if errors.Is(err, fs.ErrExist) {
		return loadNodeKey(path, logger) // another first start won the race
	}
	if err != nil {
		return nil, fmt.Errorf("write node key: %w", err)
	}
	logger.Info("created node key", "path", path)
	return key, nil
}

// loadNodeKey reads an Ed25519 private key in PKCS#8 PEM. A missing file is
// reported as fs.ErrNotExist.
func loadNodeKey(path string, logger *slog.Logger) (ed25519.PrivateKey, error) {
	b, err := readSecretFile(path, logger)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read node key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != pemPrivateKey {
		return nil, fmt.Errorf("node key %s: want a PEM %q block", path, pemPrivateKey)
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
