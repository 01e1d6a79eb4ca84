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
	"github.com/civnode/civnode/transparency"
)

// OriginKeyPath is a mirror's pinned origin key: the origin's note verifier
// key, one line. A mirror's data dir has it instead of node.key.
func (d Dir) OriginKeyPath() string { return filepath.Join(string(d), "origin.vkey") }

// EvidencePrefix is where a mirror's evidence files go:
// mirror.evidence-<UTC time>-<problem>.json in the data dir.
func (d Dir) EvidencePrefix() string { return filepath.Join(string(d), "mirror") }

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
		return nil, d.mirrorOpenError(err)
	}
	return l, nil
}

// mirrorOpenError is OpenError for a mirror's log, whose key is the pinned
// origin's: a chain of another node means origin.vkey is not the one this
// mirror was made with.
func (d Dir) mirrorOpenError(err error) error {
	if errors.Is(err, eventlog.ErrWrongKey) {
		return fmt.Errorf("open event log in %s: %w; %s is not the key of the origin this mirror copied: restore the mirror's origin.vkey",
			d.DBPath(), err, d.OriginKeyPath())
	}
	return d.OpenError(err)
}

// IsMirror reports whether d is a mirror's data dir: it has origin.vkey and
// no node.key.
func (d Dir) IsMirror() bool {
	if _, err := os.Stat(d.KeyPath()); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	_, err := os.Stat(d.OriginKeyPath())
	return err == nil
}

// PinnedOrigin reads and parses a mirror's origin.vkey: the key, named
// civnode/<did>, its chain is checked with.
func (d Dir) PinnedOrigin() (transparency.Key, error) {
	vkey, err := d.OriginKey()
	if err != nil {
		return transparency.Key{}, err
	}
	if vkey == "" {
		return transparency.Key{}, fmt.Errorf("%s is missing: %w", d.OriginKeyPath(), fs.ErrNotExist)
	}
	k, err := transparency.ParseKey(vkey)
	if err != nil {
		return transparency.Key{}, fmt.Errorf("%s: %w", d.OriginKeyPath(), err)
	}
	return k, nil
}

// ChainKey is what opens the chain of an existing data dir: a node's own
// key, or in a mirror's the pinned origin's public key, with which the
// mirror checks the origin's chain and never signs.
type ChainKey struct {
	Node   ed25519.PrivateKey // nil in a mirror's data dir
	Origin ed25519.PublicKey  // the origin's key in a mirror's data dir; nil in a node's
}

// Mirror reports whether k is a mirror's.
func (k ChainKey) Mirror() bool { return k.Node == nil }

// Apply sets opts' Key, or for a mirror its PublicKey.
func (k ChainKey) Apply(opts *eventlog.Options) {
	if k.Mirror() {
		opts.Key, opts.PublicKey = nil, k.Origin
		return
	}
	opts.Key, opts.PublicKey = k.Node, nil
}

// ExistingChainKey is ExistingNodeKey for a data dir that may be a mirror's:
// a dir with origin.vkey and no node.key opens with the origin's key. A dir
// with neither is refused as ExistingNodeKey refuses it.
func (d Dir) ExistingChainKey(logger *slog.Logger) (ChainKey, error) {
	if !d.IsMirror() {
		key, err := d.ExistingNodeKey(logger)
		return ChainKey{Node: key}, err
	}
	k, err := d.PinnedOrigin()
	if err != nil {
		return ChainKey{}, err
	}
	if _, err := os.Stat(d.DBPath()); err != nil {
		return ChainKey{}, fmt.Errorf("no event log in %s: %w", d, err)
	}
	return ChainKey{Origin: k.PublicKey()}, nil
}

// OpenChainLog opens the event log in d with k (a node's or a mirror's) and
// opts' hooks.
func (d Dir) OpenChainLog(k ChainKey, logger *slog.Logger, opts eventlog.Options) (*eventlog.Log, error) {
	if k.Mirror() {
		return d.OpenMirrorLog(k.Origin, logger, opts)
	}
	return d.OpenLog(k.Node, logger, opts)
}
