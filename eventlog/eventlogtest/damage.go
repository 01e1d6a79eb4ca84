package eventlogtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
