package backup

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// Format names the layout of a backup directory.
const Format = "civnode-backup/1"

// ManifestName is the manifest's file name in a backup directory.
const ManifestName = "manifest.json"

// Manifest says what a backup holds.
type Manifest struct {
	Format     string   `json:"format"`
	CreatedAt  string   `json:"created_at"`
	NodeDID    string   `json:"node_did"`
	TipSeq     uint64   `json:"tip_seq"`
	TipID      string   `json:"tip_id"`
	RootHash   string   `json:"chain_root_hash"`
	TreeSize   int64    `json:"tree_size"`
	TreeRoot   string   `json:"tree_root"` // standard base64 of the 32-byte root
	Checkpoint string   `json:"checkpoint"`
	Files      []string `json:"files"` // the secret files copied beside db/
}

func newManifest(did string, b eventlog.Backup, at time.Time) Manifest {
	return Manifest{
		Format:     Format,
		CreatedAt:  at.UTC().Format(time.RFC3339),
		NodeDID:    did,
		TipSeq:     b.Tip.Seq,
		TipID:      b.Tip.ID,
		RootHash:   b.Root,
		TreeSize:   b.Tree.Size,
		TreeRoot:   base64.StdEncoding.EncodeToString(b.Tree.Root[:]),
		Checkpoint: string(b.Checkpoint),
		Files:      []string{},
	}
}

// ReadManifest reads the manifest of the backup in dir.
func ReadManifest(dir string) (Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("%s is not a backup: it has no %s (an interrupted backup has none)", dir, ManifestName)
	}
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("read %s: %w", filepath.Join(dir, ManifestName), err)
	}
	if m.Format != Format {
		return Manifest{}, fmt.Errorf("%s: format %q, want %q", filepath.Join(dir, ManifestName), m.Format, Format)
	}
	return m, nil
}
