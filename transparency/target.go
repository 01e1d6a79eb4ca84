package transparency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/civnode/civnode/internal/atomicfile"
)

// Target is where Publish writes the published layout: a directory
// (DirTarget) or an S3-compatible bucket (S3Target). Paths are the layout's,
// relative and slash-separated ("checkpoint", "tile/0/000",
// "events/x001/234"); what a static host serves them as is the same
// whichever the target.
//
// Publish's order is what makes a target crash-safe: every tile and bundle
// is Put, then Sync, then the seal and the checkpoint are Put, then Sync. A
// reader never meets a checkpoint whose tiles are missing.
type Target interface {
	// Lock prepares the target for one Publish run and keeps any other run
	// out until unlock, where the target can (a directory: flock).
	Lock(ctx context.Context) (unlock func(), err error)
	// Read is the file at rel, nil when there is none.
	Read(ctx context.Context, rel string) ([]byte, error)
	// Put writes data at rel unless the file there holds those bytes
	// already, and reports whether it wrote. What it wrote may become
	// visible before Sync, but is durable only after it.
	Put(ctx context.Context, rel string, data []byte) (bool, error)
	// Sync makes every Put so far durable, before anything after it.
	Sync(ctx context.Context) error
	// Where names rel in messages: a path, or an s3:// URL (never a secret).
	Where(rel string) string
}

// OpenTarget is the target loc names: s3://BUCKET/PREFIX, a bucket
// (S3Target, configured from getenv), else a directory (DirTarget).
func OpenTarget(loc string, getenv func(string) string) (Target, error) {
	if strings.HasPrefix(loc, "s3://") {
		return NewS3Target(loc, getenv)
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return nil, fmt.Errorf("publish directory: %w", err)
	}
	return DirTarget(abs), nil
}

// IsS3 reports whether loc names a bucket rather than a directory.
func IsS3(loc string) bool { return strings.HasPrefix(loc, "s3://") }

// DirTarget is a publish directory: every file goes to its TmpDir, is synced
// and renamed into place (internal/atomicfile), and Sync syncs every
// directory whose entries changed, deepest first; LockFile keeps two runs
// apart.
func DirTarget(dir string) Target { return &dirTarget{dir: dir} }

type dirTarget struct {
	dir    string
	tmpDir string
	ds     *dirSyncer
}

func (d *dirTarget) Where(rel string) string { return filepath.Join(d.dir, filepath.FromSlash(rel)) }

func (d *dirTarget) Lock(context.Context) (func(), error) {
	dir := d.dir
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// Readable by a web server running as another user, whatever the
		// umask; an existing directory keeps the mode its owner gave it.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create the publish directory: %w", err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create the publish directory: %w", err)
		}
	}
	unlock, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, err
	}
	// A run cut short may have left temporary files; nothing refers to them.
	tmpDir := filepath.Join(dir, TmpDir)
	if err := os.RemoveAll(tmpDir); err != nil {
		unlock()
		return nil, fmt.Errorf("clear %s: %w", tmpDir, err)
	}
	if err := os.Mkdir(tmpDir, 0o755); err != nil {
		unlock()
		return nil, fmt.Errorf("create %s: %w", tmpDir, err)
	}
	d.tmpDir, d.ds = tmpDir, newDirSyncer(dir)
	return func() {
		os.Remove(tmpDir)
		unlock()
	}, nil
}

func (d *dirTarget) Read(_ context.Context, rel string) ([]byte, error) {
	return readOptionalFile(d.Where(rel))
}

func (d *dirTarget) Put(_ context.Context, rel string, data []byte) (bool, error) {
	path := d.Where(rel)
	parent := filepath.Dir(path)
	// Synced even when nothing is written: the run that wrote a file found
	// here may have stopped before syncing its directory.
	d.ds.changed(parent)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := d.ds.mkdirAll(parent); err != nil {
		return false, err
	}
	return true, atomicfile.Replace(path, d.tmpDir, data, 0o644)
}

func (d *dirTarget) Sync(context.Context) error { return d.ds.sync() }
