package datadir

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// Dir is a node's directory; see doc.go for its files.
type Dir string

// KeyPath is node.key, TokenPath control.token, DBPath the event log's
// database.
func (d Dir) KeyPath() string   { return filepath.Join(string(d), "node.key") }
func (d Dir) TokenPath() string { return filepath.Join(string(d), "control.token") }
func (d Dir) DBPath() string    { return filepath.Join(string(d), "db") }

// SocketPath is where a running node serves the API to the CLI;
// OracleSocketPath where it serves the oracle.
func (d Dir) SocketPath() string       { return filepath.Join(string(d), "control.sock") }
func (d Dir) OracleSocketPath() string { return filepath.Join(string(d), "oracle.sock") }

// WalletsPath holds the payment accounts' keys; RegistryCredentialPath the
// node's own credential for the agent registry.
func (d Dir) WalletsPath() string { return filepath.Join(string(d), "wallets") }
func (d Dir) RegistryCredentialPath() string {
	return filepath.Join(string(d), "registry.credential")
}

// WitnessPath is the state of the node as a witness: per log, the tree it
// last cosigned. CosignaturesPath holds the cosignatures the node's witnesses
// gave its checkpoints, and its witnessed checkpoint (docs/transparency.md).
func (d Dir) WitnessPath() string      { return filepath.Join(string(d), "witness.json") }
func (d Dir) CosignaturesPath() string { return filepath.Join(string(d), "cosignatures.json") }

// BackupFiles are the files beside the store that belong to the node and that
// a backup carries, relative to the data dir: the node key (without which its
// chain cannot go on), the owner token, the registry credential, the payment
// accounts' keys, and the witness state: what the node cosigned as a witness
// (a witness restored without it could cosign a tree that conflicts with one
// it cosigned before) and the cosignatures its own checkpoints gathered; in a
// mirror's data dir, which has no node key, the pinned origin key, without
// which the copy would be no mirror of anyone; and the instance id, so that a
// node restored from its backup is still the instance it was, and a
// node.promoted naming another instance tells it that it was replaced. The
// sockets are the running process's, not state.
var BackupFiles = []string{"node.key", "origin.vkey", "control.token", "registry.credential", "wallets", "witness.json", "cosignatures.json", "instance"}

// Help describes the --data-dir flag.
const Help = "node data directory (default $CIVNODE_DATA_DIR, else ~/.civnode)"

// Resolve applies the defaults of --data-dir: $CIVNODE_DATA_DIR, else
// ~/.civnode. getenv and homeDir are the process's surroundings.
func Resolve(flag string, getenv func(string) string, homeDir func() (string, error)) (Dir, error) {
	dir := flag
	if dir == "" {
		dir = getenv("CIVNODE_DATA_DIR")
	}
	if dir == "" {
		home, err := homeDir()
		if err != nil {
			return "", fmt.Errorf("find the default data dir (set --data-dir or CIVNODE_DATA_DIR): %w", err)
		}
		dir = filepath.Join(home, ".civnode")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	return Dir(abs), nil
}

// Create makes the directory with mode 0700 if it does not exist, warning
// when it exists with a looser mode.
func (d Dir) Create(logger *slog.Logger) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	fi, err := os.Stat(string(d))
	if err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("data dir is accessible by group or others; chmod 700 it", logkey.Path, string(d), logkey.Mode, fi.Mode().Perm().String())
	}
	return nil
}

// ExistingNodeKey loads the key of a node that must already exist, for a
// one-shot command: a dir without a node key or database is an error rather
// than a new node.
func (d Dir) ExistingNodeKey(logger *slog.Logger) (ed25519.PrivateKey, error) {
	key, err := LoadNodeKey(d.KeyPath(), logger)
	if errors.Is(err, fs.ErrNotExist) {
		if err := d.RefuseLostKey(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no node in %s (node.key is missing); start one with civnode serve --data-dir %s", d, d)
	}
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.DBPath()); err != nil {
		return nil, fmt.Errorf("no event log in %s: %w", d, err)
	}
	return key, nil
}

// RefuseLostKey is the error for a data dir whose node.key is missing, when
// its chain exists: it says whose chain it is, read without the key and
// without writing. A new key cannot continue a chain that another key signed,
// so the lost key must be restored. It is nil when there is no chain.
func (d Dir) RefuseLostKey() error {
	did, err := eventlog.ChainNodeDID(d.DBPath())
	if IsLockHeld(err) {
		return fmt.Errorf("%w (%s)", ErrInUse, d)
	}
	if err != nil {
		return fmt.Errorf("%w in %s, and its chain cannot be read: %w", ErrNodeKeyLost, d, err)
	}
	if did == "" {
		return nil
	}
	return fmt.Errorf("%w in %s, but its chain belongs to %s; restore node.key (a new key cannot continue this chain)",
		ErrNodeKeyLost, d, did)
}

// OpenLog opens the event log in d with opts' hooks, turning the database's
// lock into ErrInUse.
func (d Dir) OpenLog(key ed25519.PrivateKey, logger *slog.Logger, opts eventlog.Options) (*eventlog.Log, error) {
	opts.Dir, opts.Key, opts.Logger = d.DBPath(), key, logger
	l, err := eventlog.Open(opts)
	if err != nil {
		return nil, d.OpenError(err)
	}
	return l, nil
}

// OpenError says what failed to open, turning the database's lock into
// ErrInUse and adding what to do about a key that is not the chain's.
func (d Dir) OpenError(err error) error {
	switch {
	case IsLockHeld(err):
		return fmt.Errorf("%w (%s)", ErrInUse, d)
	case errors.Is(err, eventlog.ErrWrongKey):
		return fmt.Errorf("open event log in %s: %w; node.key in %s is not the key this chain was created with: restore the chain's node.key",
			d.DBPath(), err, d)
	default:
		return fmt.Errorf("open event log in %s: %w", d.DBPath(), err)
	}
}

// IsLockHeld recognises Pebble's refusal to open a locked database: the bare
// errno of fcntl(F_SETLK), EAGAIN or EACCES, when another process holds the lock,
// and Pebble's own message when this process does (the in-process tests run a
// node and a verify side by side). An errno inside a *fs.PathError is a file that
// could not be opened at all, such as a permission problem, not the lock.
func IsLockHeld(err error) bool {
	if err == nil {
		return false
	}
	if strings.Contains(err.Error(), "lock held by current process") {
		return true
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES)
}
