//go:build !(linux || darwin)

package doctor

import (
	"errors"
	"io/fs"
)

// fileOwner is unknown here: doctor checks owners on Linux and macOS only.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// freeBytes is unknown here: doctor checks free space on Linux and macOS only.
func freeBytes(string) (uint64, error) {
	return 0, errors.New("free space is checked on Linux and macOS only")
}
