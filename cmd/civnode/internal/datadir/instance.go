package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/civnode/civnode/internal/atomicfile"
)

// InstancePath holds the node's instance id: a random id that tells this
// node apart from another promoted in its place (node.promoted), one line.
// A backup carries it, so a restored node is the instance it was.
func (d Dir) InstancePath() string { return filepath.Join(string(d), "instance") }

// InstanceID reads the data dir's instance id, making it on first call: 16
// random bytes, hex. Two calls that race make one id between them.
func (d Dir) InstanceID() (string, error) {
	b, err := os.ReadFile(d.InstancePath())
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the instance id: %w", err)
	}
	return d.newInstanceID()
}

// NewInstanceID replaces the instance id with a new one (a promoted data
// dir is another instance than the node it follows).
func (d Dir) NewInstanceID() (string, error) {
	if err := os.Remove(d.InstancePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return d.newInstanceID()
}

func (d Dir) newInstanceID() (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw)
	err := atomicfile.Create(d.InstancePath(), []byte(id+"\n"), 0o644)
	if errors.Is(err, fs.ErrExist) {
		return d.InstanceID()
	}
	if err != nil {
		return "", fmt.Errorf("make the instance id: %w", err)
	}
	return id, nil
}

// AdoptInstanceID sets the instance id of a data dir that has none yet to
// id, durably; one it has already is kept and returned. A data dir rebuilt
// from the chain alone (civnode import) continues the instance that signed
// the chain's tail, as a restore from that instance's backup does.
func (d Dir) AdoptInstanceID(id string) (string, error) {
	err := atomicfile.Create(d.InstancePath(), []byte(id+"\n"), 0o644)
	if errors.Is(err, fs.ErrExist) {
		return d.InstanceID()
	}
	if err != nil {
		return "", fmt.Errorf("write the instance id: %w", err)
	}
	return id, nil
}
