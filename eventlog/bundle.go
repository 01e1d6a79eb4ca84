package eventlog

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// BundleHeader fixes the export id and seal time of a bundle; zero fields get a
// fresh UUIDv7 and the log's clock.
type BundleHeader struct {
	ExportID    string
	GeneratedAt time.Time
}

// BundleSummary describes a written bundle.
type BundleSummary struct {
	ExportID    string
	GeneratedAt string
	RootHash    string
	TipHash     string
	EventCount  uint64
	// Signature is the bundle_signature: standard base64 of the seal.
	Signature string
	// Checkpoint is the signed checkpoint of the tree of EventCount events.
	Checkpoint string
}

// exportSeal is the seal of an export sealed at at (zero: now): the node
// signs its tip; a mirror exports the chain up to the origin's newest stored
// seal, with that seal, whatever at says.
func (l *Log) exportSeal(at time.Time) (Seal, error) {
	if l.ReadOnly() {
		return l.Seal()
	}
	if at.IsZero() {
		at = l.now()
	}
	tip := l.Tip()
	_, checkpoint, err := l.TreeCheckpointAt(int64(tip.Seq))
	if err != nil {
		return Seal{}, fmt.Errorf("checkpoint of the export: %w", err)
	}
	s := Seal{EventCount: tip.Seq, RootHash: l.RootHash(), TipHash: tip.ID,
		GeneratedAt: at.UTC().Format(TimeLayout), Checkpoint: string(checkpoint)}
	s.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(l.key, sealedBytes(s.RootHash, s.TipHash, s.GeneratedAt)))
	return s, nil
}

// WriteBundle streams the whole chain up to the current tip as a signed export
// bundle (docs/wire-formats.md). It holds one event in memory at a time and stops once ctx
// is done; the seal covers the tip fixed when the call starts, so the framing
// after the events is known upfront.
func (l *Log) WriteBundle(ctx context.Context, w io.Writer, h BundleHeader, progress func(seq uint64)) (BundleSummary, error) {
	if h.ExportID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return BundleSummary{}, fmt.Errorf("export id: %w", err)
		}
		h.ExportID = id.String()
	}
	seal, err := l.exportSeal(h.GeneratedAt)
	if err != nil {
		return BundleSummary{}, err
	}
	s := BundleSummary{
		ExportID:    h.ExportID,
		GeneratedAt: seal.GeneratedAt,
		RootHash:    seal.RootHash,
		TipHash:     seal.TipHash,
		EventCount:  seal.EventCount,
		Signature:   seal.Signature,
		// The checkpoint of the same event_count (docs/transparency.md): a
		// verifier recomputes the tree's root from the events and holds it to
		// this.
		Checkpoint: seal.Checkpoint,
	}
	tip := Tip{Seq: seal.EventCount, ID: seal.TipHash}
	checkpointJSON, _ := json.Marshal(s.Checkpoint)

	bw := bufio.NewWriterSize(w, 64<<10)
	head, _ := json.Marshal(struct {
		ExportID    string `json:"export_id"`
		NodeDID     string `json:"node_did"`
		PublicKey   string `json:"public_key"`
		GeneratedAt string `json:"generated_at"`
	}{s.ExportID, l.did, base64.StdEncoding.EncodeToString(l.pub), s.GeneratedAt})
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"events":[`)
	// The stored bytes are the served form (doc.go): they are copied, never
	// decoded, and the scan stops once ctx is done.
	err = l.scanRaw(ctx, 1, tip.Seq, func(seq uint64, raw []byte) error {
		if seq > 1 {
			bw.WriteByte(',')
		}
		if _, err := bw.Write(raw); err != nil {
			return err
		}
		if progress != nil {
			progress(seq)
		}
		return nil
	})
	if err != nil {
		return BundleSummary{}, fmt.Errorf("write bundle: %w", err)
	}
	fmt.Fprintf(bw, `],"chain_root_hash":"%s","chain_tip_hash":"%s","event_count":%s,"checkpoint":%s,"bundle_signature":"%s"}`,
		s.RootHash, s.TipHash, strconv.FormatUint(s.EventCount, 10), checkpointJSON, s.Signature)
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return BundleSummary{}, fmt.Errorf("write bundle: %w", err)
	}
	return s, nil
}
