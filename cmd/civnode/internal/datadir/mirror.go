package datadir

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
)

// OriginKeyPath is a mirror's pinned origin key: the origin's note verifier
// key, one line. A mirror's data dir has it instead of node.key.
func (d Dir) OriginKeyPath() string { return filepath.Join(string(d), "origin.vkey") }

// EvidencePrefix is where a mirror's evidence files go:
// mirror.evidence-<UTC time>-<problem>.json in the data dir.
func (d Dir) EvidencePrefix() string { return filepath.Join(string(d), "mirror") }

// ErrNotAMirror is a mirror command on a node's own data dir.
var ErrNotAMirror = errors.New("the data dir is a node's (it has node.key), not a mirror's")

// OriginKey reads the pinned origin key, "" when the data dir has none yet.
// A dir with node.key is refused: a mirror never signs, and a node's own
// chain must not be overwritten by another's.
func (d Dir) OriginKey() (string, error) {
	if _, err := os.Stat(d.KeyPath()); err == nil {
		return "", fmt.Errorf("%w: %s", ErrNotAMirror, d)
	}
	b, err := os.ReadFile(d.OriginKeyPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the origin's key: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
}

// PinOriginKey writes the origin key a new mirror trusts, durably.
func (d Dir) PinOriginKey(vkey string) error {
	if err := atomicfile.Replace(d.OriginKeyPath(), string(d), []byte(vkey+"\n"), 0o644); err != nil {
		return err
	}
	return atomicfile.SyncDir(string(d))
}

// OpenMirrorLog opens a mirror's event log in d, of the chain of the node
// with pub, with opts' hooks.
func (d Dir) OpenMirrorLog(pub ed25519.PublicKey, logger *slog.Logger, opts eventlog.Options) (*eventlog.Log, error) {
	opts.Dir, opts.Key, opts.PublicKey, opts.Logger = d.DBPath(), nil, pub, logger
	l, err := eventlog.Open(opts)
	if err != nil {
		return nil, d.OpenError(err)
	}
	return l, nil
}
