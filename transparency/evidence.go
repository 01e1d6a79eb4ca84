package transparency

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/internal/atomicfile"
)

// withEvidence writes what the host served when Check found a problem, in a
// new file next to the state file, and adds its name to err.
func withEvidence(opts CheckOptions, url string, st *State, served []byte, proof tlog.TreeProof, rep *Report, err error) error {
	now := time.Now().UTC()
	ev := struct {
		Problem          string      `json:"problem"`
		DetectedAt       string      `json:"detected_at"`
		URL              string      `json:"url"`
		VerifierKey      string      `json:"verifier_key"`
		StoredCheckpoint string      `json:"stored_checkpoint"`
		ServedCheckpoint string      `json:"served_checkpoint"`
		ConsistencyProof []tlog.Hash `json:"consistency_proof,omitempty"`
		Error            string      `json:"error"`
	}{rep.Result, now.Format(time.RFC3339), url, st.VerifierKey, st.Checkpoint, string(served), proof, err.Error()}
	b, merr := json.MarshalIndent(ev, "", "  ")
	if merr != nil {
		return fmt.Errorf("%w (and its evidence could not be encoded: %v)", err, merr)
	}
	path, werr := writeEvidenceFile(opts.State, rep.Result, now, append(b, '\n'))
	if werr != nil {
		return fmt.Errorf("%w (and its evidence could not be written: %v)", err, werr)
	}
	rep.Evidence = path
	return fmt.Errorf("%w; what the node served is in %s", err, path)
}

// evidenceMaxTries bounds the names writeEvidenceFile tries for one
// detection: the time's own, then -2, -3, … for detections in the same second.
const evidenceMaxTries = 1000

// writeEvidenceFile writes one piece of evidence in a file of its own beside
// the state file, STATE.evidence-<UTC time>-<problem>.json, mode 0600, and
// returns its path. It never replaces a file: earlier evidence is what proves
// a fork, so every detection adds one (a fork, then a rollback, leaves both).
// The file is written and synced under a temporary name once, then linked to
// the first free name, which fails rather than replaces when the name is
// taken: a reader sees the whole record or none, and a crash leaves at most a
// stray temporary file.
func writeEvidenceFile(state, problem string, at time.Time, data []byte) (string, error) {
	dir := filepath.Dir(state)
	tmpName, err := atomicfile.WriteTemp(dir, state+".evidence", data, 0o600)
	if err != nil {
		return "", fmt.Errorf("write the evidence: %w", err)
	}
	defer os.Remove(tmpName)
	base := state + ".evidence-" + at.UTC().Format("20060102T150405Z") + "-" + problem
	for i := 1; i <= evidenceMaxTries; i++ {
		path := base + ".json"
		if i > 1 {
			path = fmt.Sprintf("%s-%d.json", base, i)
		}
		err := os.Link(tmpName, path)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("write the evidence %s: %w", path, err)
		}
		if err := atomicfile.SyncDir(dir); err != nil {
			return "", fmt.Errorf("write the evidence %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("write the evidence: %d files named %s* exist already", evidenceMaxTries, base)
}
