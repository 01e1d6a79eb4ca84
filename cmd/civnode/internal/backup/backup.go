package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
)

// Snapshot is a consistent copy of a store inside the data directory, from
// which Write copies a backup.
type Snapshot struct {
	Dir     string // the snapshot's store, under the data directory
	NodeDID string
	Backup  eventlog.Backup
}

// snapshotPrefix names snapshot directories in the data directory; one left
// by a crash is clutter that Remove or a later Write clears.
const snapshotPrefix = "backup.tmp-"

// TakeSnapshot copies l's store into a new directory under dataDir with
// Pebble's checkpoint: hard links on the store's own file system, so commits
// wait only for the links.
func TakeSnapshot(l *eventlog.Log, dataDir string, now time.Time) (Snapshot, error) {
	dir := filepath.Join(dataDir, snapshotPrefix+strconv.FormatInt(now.UnixNano(), 10))
	b, err := l.Backup(dir)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Dir: dir, NodeDID: l.NodeDID(), Backup: b}, nil
}

// Remove deletes the snapshot's directory.
func (s Snapshot) Remove() error { return os.RemoveAll(s.Dir) }

// Progress is told how many bytes of how many have been copied.
type Progress func(done, total int64)

// Write copies the snapshot and the secret files named (relative to dataDir;
// a missing one is skipped, a directory is copied whole) into dest, which
// must not exist or be empty, and writes the manifest last. Files are synced
// and directories made durable before the manifest names them.
func Write(s Snapshot, dataDir string, secrets []string, dest string, now time.Time, progress Progress) (Manifest, error) {
	if err := emptyTarget(dest); err != nil {
		return Manifest{}, err
	}
	m := newManifest(s.NodeDID, s.Backup, now)
	var plan []copyStep
	if err := planTree(s.Dir, filepath.Join(dest, "db"), 0o600, &plan); err != nil {
		return Manifest{}, err
	}
	for _, name := range secrets {
		src := filepath.Join(dataDir, name)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := planTree(src, filepath.Join(dest, name), 0o600, &plan); err != nil {
			return Manifest{}, err
		}
		m.Files = append(m.Files, name)
	}
	if err := run(plan, dest, progress); err != nil {
		return Manifest{}, err
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := atomicfile.Create(filepath.Join(dest, ManifestName), append(body, '\n'), 0o600); err != nil {
		return Manifest{}, fmt.Errorf("write the manifest: %w", err)
	}
	return m, nil
}

// Restore copies the backup in src (its store and secret files, not its
// manifest) into dest, which must not exist or be empty, and returns the
// manifest. A manifest whose checkpoint does not bear out its tree is refused
// before anything is copied (CheckManifest). The caller verifies what it
// restored before a node starts on it.
func Restore(src, dest string, progress Progress) (Manifest, error) {
	m, err := ReadManifest(src)
	if err != nil {
		return Manifest{}, err
	}
	if err := CheckManifest(m); err != nil {
		return Manifest{}, err
	}
	if err := emptyTarget(dest); err != nil {
		return Manifest{}, err
	}
	var plan []copyStep
	if err := planTree(filepath.Join(src, "db"), filepath.Join(dest, "db"), 0o600, &plan); err != nil {
		return Manifest{}, err
	}
	for _, name := range m.Files {
		if !filepath.IsLocal(name) {
			return Manifest{}, fmt.Errorf("%s names the file %q outside the backup", ManifestName, name)
		}
		if err := planTree(filepath.Join(src, name), filepath.Join(dest, name), 0o600, &plan); err != nil {
			return Manifest{}, err
		}
	}
	return m, run(plan, dest, progress)
}

// emptyTarget creates dir with mode 0700 if it does not exist, and refuses
// one that holds anything.
func emptyTarget(dir string) error {
	_, err := newTarget(dir, "give a new directory")
	return err
}

// copyStep is one directory to make or one file to copy.
type copyStep struct {
	src, dst string
	dir      bool
	size     int64
	perm     fs.FileMode
}

// planTree lists the steps that copy src (a file or a directory of regular
// files and directories) to dst. Anything else (a socket, a link) is refused:
// a data directory holds none that belongs in a backup.
func planTree(src, dst string, perm fs.FileMode, plan *[]copyStep) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			*plan = append(*plan, copyStep{dst: target, dir: true})
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			*plan = append(*plan, copyStep{src: path, dst: target, size: fi.Size(), perm: perm})
		default:
			return fmt.Errorf("%s is not a regular file or directory", path)
		}
		return nil
	})
}

// run carries out a plan below root: directories first (in walk order,
// parents before children), then files, each synced, then every directory
// and root synced.
func run(plan []copyStep, root string, progress Progress) error {
	var total, done int64
	var dirs []string
	for _, st := range plan {
		total += st.size
		if st.dir {
			if err := os.MkdirAll(st.dst, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, st.dst)
		}
	}
	if progress != nil {
		progress(0, total)
	}
	for _, st := range plan {
		if st.dir {
			continue
		}
		n, err := copyFile(st.src, st.dst, st.perm, func(n int64) {
			if progress != nil {
				progress(done+n, total)
			}
		})
		if err != nil {
			return err
		}
		done += n
	}
	for _, d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(root)
}

// copyFile copies src to a new file dst with mode perm and syncs it.
func copyFile(src, dst string, perm fs.FileMode, copied func(int64)) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, &countingReader{r: in, seen: copied})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("copy %s: %w", src, err)
	}
	return n, nil
}

type countingReader struct {
	r    io.Reader
	n    int64
	seen func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.seen(c.n)
	return n, err
}

// Take takes a snapshot of l's store inside dataDir, as TakeSnapshot does,
// and records it in the audit log (backup.snapshot); the node's admin
// endpoint and an offline backup share it.
func Take(ctx context.Context, l *eventlog.Log, dataDir string, now time.Time) (Snapshot, error) {
	snap, err := TakeSnapshot(l, dataDir, now)
	if err != nil {
		return Snapshot{}, err
	}
	if _, err := l.Audit(ctx, "backup.snapshot", l.NodeDID(), map[string]any{
		"tip_seq": snap.Backup.Tip.Seq, "chain_tip_hash": snap.Backup.Tip.ID,
	}); err != nil {
		return Snapshot{}, errors.Join(fmt.Errorf("audit backup.snapshot: %w", err), snap.Remove())
	}
	return snap, nil
}
