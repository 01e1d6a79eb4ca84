package datadir

import (
	"regexp"
	"sync"
	"testing"
)

// InstanceID makes a random id on first call and keeps it; racing first
// calls agree; NewInstanceID replaces it with another.
func TestInstanceID(t *testing.T) {
	d := Dir(t.TempDir())
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := d.InstanceID()
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(ids[0]) {
		t.Fatalf("instance id %q, want 32 hex digits", ids[0])
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("racing first calls made %q and %q", ids[0], id)
		}
	}
	again, err := d.InstanceID()
	if err != nil || again != ids[0] {
		t.Fatalf("second call: %q %v, want %q", again, err, ids[0])
	}
	other, err := d.NewInstanceID()
	if err != nil || other == ids[0] {
		t.Fatalf("NewInstanceID: %q %v, want an id other than %q", other, err, ids[0])
	}
	if kept, err := d.InstanceID(); err != nil || kept != other {
		t.Fatalf("after NewInstanceID: %q %v, want %q", kept, err, other)
	}
	other2 := Dir(t.TempDir())
	if id, err := other2.InstanceID(); err != nil || id == ids[0] || id == other {
		t.Fatalf("another data dir's id %q %v", id, err)
	}
}
