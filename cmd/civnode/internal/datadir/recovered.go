package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/civnode/civnode/internal/atomicfile"
)

// How a data dir was made from something other than its node's own running:
// the mark restore, import and promote leave, which a node with witnesses
// holds read-only until a quorum of them has said it is not behind.
const (
	RecoveredByRestore = "restore"
	RecoveredByImport  = "import"
	RecoveredByPromote = "promote"
)

// RecoveredPath is the mark of a recovered data dir: one line, how it was
// made (RecoveredBy*).
func (d Dir) RecoveredPath() string { return filepath.Join(string(d), "recovered") }

// MarkRecovered writes the mark durably: the file and the directory entry
// are synced before it returns, so a node never starts on a recovered data
// dir that forgot it.
func (d Dir) MarkRecovered(how string) error {
	switch how {
	case RecoveredByRestore, RecoveredByImport, RecoveredByPromote:
	default:
		return fmt.Errorf("mark a recovered data dir: unknown way %q", how)
	}
	if err := atomicfile.Replace(d.RecoveredPath(), string(d), []byte(how+"\n"), 0o600); err != nil {
		return err
	}
	return atomicfile.SyncDir(string(d))
}

// Recovered reads the mark: how the data dir was made, "" when it has none.
func (d Dir) Recovered() (string, error) {
	b, err := os.ReadFile(d.RecoveredPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the recovered mark: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ClearRecovered removes the mark once the node has learnt it is not behind,
// durably.
func (d Dir) ClearRecovered() error {
	if err := os.Remove(d.RecoveredPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(string(d))
}
