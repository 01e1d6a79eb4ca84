package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestBundleCheckpoint: an export carries the checkpoint of its event_count,
// the verifier recomputes the tree's root from the events and holds the
// checkpoint to it, and a checkpoint that is not the chain's is refused.
func TestBundleCheckpoint(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 40)
	var buf bytes.Buffer
	sum, err := l.WriteBundle(context.Background(), &buf, BundleHeader{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyBundle(context.Background(), bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := l.TreeHead()
	if !rep.Checkpoint || rep.TreeRoot != head.Root || sum.Checkpoint == "" {
		t.Fatalf("report %+v, want a verified checkpoint with root %x", rep, head.Root)
	}

	var bundle map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &bundle); err != nil {
		t.Fatal(err)
	}
	other := openMem(t, Options{Key: seedKey(t, strings.Repeat("07", 32))})
	appendN(t, other, 40)
	_, foreign, _ := other.TreeCheckpoint()
	_, older, _ := l.TreeCheckpointAt(30)
	cases := map[string]string{
		"another node's":   string(foreign),
		"an older size's":  string(older),
		"unsigned":         strings.SplitN(sum.Checkpoint, "\n\n", 2)[0] + "\n",
		"a changed root":   strings.Replace(sum.Checkpoint, "\n41\n", "\n41\n"+"A", 1),
		"a changed origin": strings.Replace(sum.Checkpoint, "civnode/", "civnodf/", 1),
	}
	for name, cp := range cases {
		changed := map[string]json.RawMessage{}
		for k, v := range bundle {
			changed[k] = v
		}
		changed["checkpoint"], _ = json.Marshal(cp)
		b, _ := json.Marshal(changed)
		_, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil)
		if !errors.Is(err, ErrBadBundle) || !strings.Contains(err.Error(), "checkpoint") {
			t.Errorf("%s checkpoint: %v, want ErrBadBundle naming the checkpoint", name, err)
		}
	}

	// A bundle from before the tree has no checkpoint and still verifies.
	delete(bundle, "checkpoint")
	b, _ := json.Marshal(bundle)
	rep, err = VerifyBundle(context.Background(), bytes.NewReader(b), nil)
	if err != nil || rep.Checkpoint || rep.TreeRoot != head.Root {
		t.Fatalf("bundle without a checkpoint: %+v %v", rep, err)
	}
}
