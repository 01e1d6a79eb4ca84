//go:build linux || darwin

package transparency

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on path, a file in the publish
// directory, for as long as Publish runs: two publishers that overlapped could
// otherwise end with the older checkpoint written last, which observers would
// see as a rollback. The lock goes with the process, so a crash leaves none.
func lockDir(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the publish directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another civnode transparency publish is writing to this directory (it holds %s)", path)
		}
		return nil, fmt.Errorf("lock the publish directory: %w", err)
	}
	return func() { f.Close() }, nil
}
