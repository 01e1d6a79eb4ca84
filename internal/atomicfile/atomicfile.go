package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Create puts data at path with mode perm unless path exists, in which case it
// returns an error that matches fs.ErrExist and leaves path as it was. The new
// directory entry is synced before Create returns.
func Create(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	name, err := writeTemp(dir, path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(name)
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	return SyncDir(dir)
}

// Replace puts data at path with mode perm through a temporary file in tmpDir,
// which must be on path's file system ("" means path's own directory). The
// rename is durable once path's directory is synced; the caller does that,
// since a publisher syncs each directory once for many files.
func Replace(path, tmpDir string, data []byte, perm fs.FileMode) error {
	if tmpDir == "" {
		tmpDir = filepath.Dir(path)
	}
	name, err := writeTemp(tmpDir, path, data, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteTemp writes data, synced and with mode perm, to a new temporary file in
// dir named after path, and returns its name. The caller links or renames it
// and removes it when done; Create and Replace are the usual callers.
func WriteTemp(dir, path string, data []byte, perm fs.FileMode) (string, error) {
	return writeTemp(dir, path, data, perm)
}

func writeTemp(dir, path string, data []byte, perm fs.FileMode) (string, error) {
	// CreateTemp opens with O_EXCL and mode 0600, so a secret is never
	// readable by others, even before the chmod.
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// SyncDir makes the entries of dir durable: a new, renamed or removed name
// survives a crash only once its directory is synced.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
