package main

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
)

// dataDir is a node's directory; see doc.go for its files.
type dataDir string

func (d dataDir) keyPath() string   { return filepath.Join(string(d), "node.key") }
func (d dataDir) tokenPath() string { return filepath.Join(string(d), "control.token") }
func (d dataDir) dbPath() string    { return filepath.Join(string(d), "db") }

// oracleSocketPath is where a running node serves the oracle to the CLI
// (oracle_socket.go); control.sock is socketPath.
func (d dataDir) oracleSocketPath() string { return filepath.Join(string(d), "oracle.sock") }

// walletsPath holds the payment accounts' keys; registryCredentialPath the
// node's own credential for the agent registry (wire.md §9).
func (d dataDir) walletsPath() string { return filepath.Join(string(d), "wallets") }
func (d dataDir) registryCredentialPath() string {
	return filepath.Join(string(d), "registry.credential")
}

const dataDirHelp = "node data directory (default $CIVNODE_DATA_DIR, else ~/.civnode)"

// resolveDataDir applies the defaults of --data-dir: $CIVNODE_DATA_DIR, else
// ~/.civnode.
func (m *Main) resolveDataDir(flag string) (dataDir, error) {
	dir := flag
	if dir == "" {
		dir = m.Getenv("CIVNODE_DATA_DIR")
	}
	if dir == "" {
		home, err := m.HomeDir()
		if err != nil {
			return "", fmt.Errorf("find the default data dir (set --data-dir or CIVNODE_DATA_DIR): %w", err)
		}
		dir = filepath.Join(home, ".civnode")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	return dataDir(abs), nil
}

// create makes the directory with mode 0700 if it does not exist.
func (d dataDir) create(logger *slog.Logger) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	fi, err := os.Stat(string(d))
	if err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("data dir is accessible by group or others; chmod 700 it", "path", string(d), "mode", fi.Mode().Perm().String())
	}
	return nil
}

// openChain opens the event log of an existing node for a one-shot command
// (verify --data-dir, export, replay). It creates nothing: a dir without a node
// key or database is an error rather than a new node.
func (d dataDir) openChain(logger *slog.Logger) (*eventlog.Log, error) {
	key, err := d.existingNodeKey(logger)
	if err != nil {
		return nil, err
	}
	return openLog(d, key, logger, eventlog.Options{OnTreeBuild: treeBuildProgress(logger, nil)})
}

// existingNodeKey loads the key of a node that must already exist.
func (d dataDir) existingNodeKey(logger *slog.Logger) (ed25519.PrivateKey, error) {
	key, err := loadNodeKey(d.keyPath(), logger)
	if errors.Is(err, fs.ErrNotExist) {
		if err := d.refuseLostKey(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no node in %s (node.key is missing); start one with civnode serve --data-dir %s", d, d)
	}
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.dbPath()); err != nil {
		return nil, fmt.Errorf("no event log in %s: %w", d, err)
	}
	return key, nil
}

// refuseLostKey is the error for a data dir whose node.key is missing, when
// its chain exists: it says whose chain it is, read without the key and
// without writing. A new key cannot continue a chain that another key signed,
// so the lost key must be restored. It is nil when there is no chain.
func (d dataDir) refuseLostKey() error {
	did, err := eventlog.ChainNodeDID(d.dbPath())
	if isLockHeld(err) {
		return fmt.Errorf("%w (%s)", errDataDirInUse, d)
	}
	if err != nil {
		return fmt.Errorf("%w in %s, and its chain cannot be read: %w", errNodeKeyLost, d, err)
	}
	if did == "" {
		return nil
	}
	return fmt.Errorf("%w in %s, but its chain belongs to %s; restore node.key (a new key cannot continue this chain)",
		errNodeKeyLost, d, did)
}

// openLog opens the event log with opts' hooks, turning the database's lock into
// errDataDirInUse.
func openLog(d dataDir, key ed25519.PrivateKey, logger *slog.Logger, opts eventlog.Options) (*eventlog.Log, error) {
	opts.Dir, opts.Key, opts.Logger = d.dbPath(), key, logger
	l, err := eventlog.Open(opts)
	if err != nil {
		return nil, d.openError(err)
	}
	return l, nil
}

// openError says what failed to open, turning the database's lock into
// errDataDirInUse and adding what to do about a key that is not the chain's.
func (d dataDir) openError(err error) error {
	switch {
	case isLockHeld(err):
		return fmt.Errorf("%w (%s)", errDataDirInUse, d)
	case errors.Is(err, eventlog.ErrWrongKey):
		return fmt.Errorf("open event log in %s: %w; node.key in %s is not the key this chain was created with: restore the chain's node.key",
			d.dbPath(), err, d)
	default:
		return fmt.Errorf("open event log in %s: %w", d.dbPath(), err)
	}
}

// isLockHeld recognises Pebble's refusal to open a locked database: the bare
// errno of fcntl(F_SETLK), EAGAIN or EACCES, when another process holds the lock,
// and Pebble's own message when this process does (the in-process tests run a
// node and a verify side by side). An errno inside a *fs.PathError is a file that
// could not be opened at all, such as a permission problem, not the lock.
func isLockHeld(err error) bool {
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
