package eventlogtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// FlipInSSTable flips one byte of marker where an sstable in dir (a Pebble
// directory) holds it, and returns the file's path. Tests write marker as
// random padding of an event, so it says which event's block is damaged.
// Snappy may store a few bytes of it as a reference to earlier bytes, so any 16
// characters of marker that appear literally will do: 64 random bits of hex,
// which nothing else in the store holds. The block then fails its checksum
// when read, as after a flipped bit on the disk.
func FlipInSSTable(dir, marker string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		for at := 0; at+16 <= len(marker); at += 16 {
			if i := bytes.Index(b, []byte(marker[at:at+16])); i >= 0 {
				b[i+8] ^= 0x01
				if err := os.WriteFile(f, b, 0o600); err != nil {
					return "", err
				}
				return f, nil
			}
		}
	}
	return "", fmt.Errorf("no 16 characters of the marker are in an sstable of %s", dir)
}

// EditModels rewrites read-model values in the Pebble directory dir of a
// closed log, as a bug or an intruder might: edit sees every key of the live
// model space (without its space byte) and returns a new value, or nil to
// leave the key as it is. It returns how many values it changed. The chain
// is untouched, so a replay of it shows what the models should have held.
func EditModels(dir string, edit func(key, value []byte) []byte) (int, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	live := byte(0x07) // eventlog's first model space, live until a rebuild swaps
	if v, closer, err := db.Get([]byte("\x00models")); err == nil {
		if len(v) == 1 {
			live = v[0]
		}
		closer.Close()
	} else if err != pebble.ErrNotFound {
		return 0, err
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{live}, UpperBound: []byte{live + 1}})
	if err != nil {
		return 0, err
	}
	b := db.NewBatch()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if v := edit(it.Key()[1:], it.Value()); v != nil {
			b.Set(bytes.Clone(it.Key()), v, nil)
			n++
		}
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	return n, b.Commit(pebble.Sync)
}

// quiet drops Pebble's messages, which would only tell of its replay of the
// log's write-ahead log.
type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}

// Fatalf must not return: Pebble's Logger contract, which the log's own
// logger keeps the same way.
func (quiet) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
