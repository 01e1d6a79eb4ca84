package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestFailStop makes the WAL's fsync fail: the append reports it, the log refuses
// every later write and reports itself unhealthy, and the fsync is never retried.
func TestFailStop(t *testing.T) {
	var syncs int
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) && strings.HasSuffix(op.Path, ".log") {
			syncs++
			return errors.New("injected fsync failure")
		}
		return nil
	})}
	l := openMem(t, Options{FS: errorfs.Wrap(vfs.NewMem(), toggle)})
	mustAppend(t, l, draft("test.ok", "n", 1))
	toggle.On()
	if _, err := l.Append(context.Background(), draft("test.lost", "n", 2)); !errors.Is(err, ErrFailed) {
		t.Fatalf("append during fsync failure: err = %v, want ErrFailed", err)
	}
	if l.Healthy() == nil {
		t.Fatal("log still healthy after a failed fsync")
	}
	before := syncs
	toggle.Off()
	if _, err := l.Append(context.Background(), draft("test.after", "n", 3)); !errors.Is(err, ErrFailed) {
		t.Fatalf("append after failure: err = %v, want ErrFailed", err)
	}
	if syncs != before {
		t.Errorf("fsync retried after failure")
	}
	if tip := l.Tip(); tip.Seq != 2 {
		t.Errorf("tip = %d, want 2 (nothing after the failure is durable)", tip.Seq)
	}
}
