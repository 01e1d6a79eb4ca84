package transparency

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/civnode/civnode/internal/atomicfile"
)

// dirSyncer creates directories below a root and remembers every directory
// whose entries changed, so that all of them are synced once, together, before
// anything that refers to their files is written.
type dirSyncer struct {
	root  string
	dirty map[string]bool
}

func newDirSyncer(root string) *dirSyncer { return &dirSyncer{root: root, dirty: map[string]bool{}} }

// mkdirAll creates dir (below the root) and its missing parents, each with
// mode 0755, marking the parent of each one made.
func (s *dirSyncer) mkdirAll(dir string) error {
	if dir == s.root {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("create %s: a file is in the way", dir)
		}
		return nil
	}
	if err := s.mkdirAll(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// The umask may have taken away what a web server running as another
	// user needs; a tile directory holds nothing secret.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	s.dirty[filepath.Dir(dir)] = true
	return nil
}

// changed marks dir as holding a new entry.
func (s *dirSyncer) changed(dir string) { s.dirty[dir] = true }

// sync syncs every changed directory, deepest first, and forgets them.
func (s *dirSyncer) sync() error {
	dirs := make([]string, 0, len(s.dirty))
	for d := range s.dirty {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
		delete(s.dirty, d)
	}
	return nil
}

// readOptionalFile reads path, nil when it does not exist.
func readOptionalFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// writeStateFile replaces path with data, mode 0600, durably: a check cut
// short leaves the old state or the new one.
func writeStateFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := atomicfile.Replace(path, dir, data, 0o600); err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}
