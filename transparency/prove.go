package transparency

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// Proof is what civnode transparency prove prints: everything an offline
// checker needs to hold one event to a checkpoint signed by the node. The
// leaf's data is the event id's 32 bytes; Event is the event as stored, from
// which a checker recomputes that id and checks its signature.
type Proof struct {
	Checkpoint  string          `json:"checkpoint"`
	VerifierKey string          `json:"verifier_key"`
	Seq         uint64          `json:"seq"`
	EventID     string          `json:"event_id"`
	LeafIndex   int64           `json:"leaf_index"`
	LeafHash    tlog.Hash       `json:"leaf_hash"`
	TreeSize    int64           `json:"tree_size"`
	RootHash    tlog.Hash       `json:"root_hash"`
	Proof       []tlog.Hash     `json:"proof"`
	Event       json.RawMessage `json:"event,omitempty"` // written by Marshal
}

// Marshal is the proof as indented JSON, with the event last and exactly as
// stored, not re-indented: those are the bytes the node signed.
func (p *Proof) Marshal() ([]byte, error) {
	event := p.Event
	q := *p
	q.Event = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(q); err != nil {
		return nil, fmt.Errorf("encode the proof: %w", err)
	}
	out, ok := bytes.CutSuffix(buf.Bytes(), []byte("\n}\n"))
	if !ok {
		return nil, fmt.Errorf("encode the proof: unexpected end %q", buf.Bytes())
	}
	out = append(out, ",\n  \"event\": "...)
	out = append(out, event...)
	return append(out, "\n}\n"...), nil
}

// Prove assembles and checks the proof of seq in the tree of size events,
// the current tree when size is 0: the checkpoint with the node's key, the
// event's id and signature, and the inclusion path to the checkpoint's root.
func Prove(ctx context.Context, src Source, seq uint64, size int64) (*Proof, error) {
	if err := eventlog.CheckTreeSize(size); err != nil {
		return nil, fmt.Errorf("--tree-size: %w", err)
	}
	vkey, signed, err := src.Head(ctx)
	if err != nil {
		return nil, err
	}
	k, err := ParseKey(vkey)
	if err != nil {
		return nil, fmt.Errorf("the node's %w", err)
	}
	head, err := k.OpenCheckpoint(signed)
	if err != nil {
		return nil, fmt.Errorf("the node's checkpoint: %w", err)
	}
	switch {
	case size > head.Size:
		return nil, fmt.Errorf("--tree-size %d is beyond the node's tree, which has %d events", size, head.Size)
	case size != 0 && size != head.Size:
		signed, err = src.CheckpointAt(ctx, size)
		if errors.Is(err, ErrCurrentCheckpointOnly) {
			return nil, fmt.Errorf("--tree-size %d: %w (%d events); prove on the data dir of the stopped node, or leave --tree-size out", size, err, head.Size)
		}
		if err != nil {
			return nil, fmt.Errorf("sign the checkpoint of size %d: %w", size, err)
		}
		if head, err = k.OpenCheckpoint(signed); err != nil {
			return nil, fmt.Errorf("the node's checkpoint of size %d: %w", size, err)
		}
	}
	return prove(ctx, src, seq, k, signed, head)
}

// ProveWitnessed is Prove in the tree of the node's witnessed checkpoint,
// which the proof carries, cosignatures included, for an observer that
// requires witnesses (check-inclusion.mjs --witness, tlogcheck -witness).
func ProveWitnessed(ctx context.Context, src Source, seq uint64) (*Proof, error) {
	vkey, _, err := src.Head(ctx)
	if err != nil {
		return nil, err
	}
	k, err := ParseKey(vkey)
	if err != nil {
		return nil, fmt.Errorf("the node's %w", err)
	}
	signed, err := src.Witnessed(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the node's witnessed checkpoint: %w", err)
	}
	if signed == nil {
		return nil, fmt.Errorf("%w: the node has no witnessed checkpoint (serve --witness)", ErrNotWitnessed)
	}
	head, err := k.OpenCheckpoint(signed)
	if err != nil {
		return nil, fmt.Errorf("the node's witnessed checkpoint: %w", err)
	}
	return prove(ctx, src, seq, k, signed, head)
}

// prove assembles and checks the proof of seq in the tree of head, which
// signed is k's checkpoint of.
func prove(ctx context.Context, src Source, seq uint64, k Key, signed []byte, head eventlog.TreeHead) (*Proof, error) {
	vkey := k.VerifierKey
	if seq > uint64(head.Size) {
		return nil, fmt.Errorf("seq %d is beyond the tree, which has %d events", seq, head.Size)
	}
	proof, err := src.Inclusion(ctx, seq, head.Size)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d in the tree of size %d: %w", seq, head.Size, err)
	}
	raw, err := src.Event(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	id, err := checkEvent(raw, k, seq)
	if err != nil {
		return nil, err
	}
	leaf := tlog.RecordHash(id)
	if err := tlog.CheckRecord(proof, head.Size, head.Root, int64(seq)-1, leaf); err != nil {
		return nil, fmt.Errorf("the proof of seq %d from %s does not lead to the checkpoint's root: %w", seq, src.Via(), err)
	}
	if proof == nil {
		proof = []tlog.Hash{} // a tree of one event: [], not null
	}
	return &Proof{
		Checkpoint: string(signed), VerifierKey: vkey,
		Seq: seq, EventID: hex.EncodeToString(id), LeafIndex: int64(seq) - 1, LeafHash: leaf,
		TreeSize: head.Size, RootHash: head.Root, Proof: proof, Event: raw,
	}, nil
}
