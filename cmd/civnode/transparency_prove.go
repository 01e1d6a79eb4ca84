package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
)

type proveConfig struct {
	treeSize int64
	addr     string
	token    string
	dataDir  string
}

// inclusionProof is what prove prints: everything an offline checker needs
// to hold one event to a checkpoint signed by the node (docs/transparency.md).
// The leaf's data is the event id's 32 bytes; event is the event as stored,
// from which a checker recomputes that id and checks its signature.
type inclusionProof struct {
	Checkpoint  string          `json:"checkpoint"`
	VerifierKey string          `json:"verifier_key"`
	Seq         uint64          `json:"seq"`
	EventID     string          `json:"event_id"`
	LeafIndex   int64           `json:"leaf_index"`
	LeafHash    tlog.Hash       `json:"leaf_hash"`
	TreeSize    int64           `json:"tree_size"`
	RootHash    tlog.Hash       `json:"root_hash"`
	Proof       []tlog.Hash     `json:"proof"`
	Event       json.RawMessage `json:"event,omitempty"` // written by marshal
}

func (m *Main) newTransparencyProveCommand(g *globals) *cobra.Command {
	var cfg proveConfig
	cmd := &cobra.Command{
		Use:   "prove SEQ [--tree-size N] [--addr URL --token T | --data-dir DIR]",
		Short: "Print the proof that the event with SEQ is in the node's tree, checkable offline",
		Long: `prove prints one JSON object that holds the event with SEQ to a checkpoint
signed by the node, for anyone to check offline with golang.org/x/mod/sumdb/tlog
or docs/examples/check-inclusion.mjs (docs/transparency.md):

  {"checkpoint": "<signed note>", "verifier_key": "civnode/did:key:…+…+…",
   "seq": 7, "event_id": "<64 hex>", "leaf_index": 6, "leaf_hash": "<base64>",
   "tree_size": 12, "root_hash": "<base64>", "proof": ["<base64>", …],
   "event": {…the event as stored…}}

The leaf is SHA-256(0x00 ‖ the 32 bytes of event_id); proof is its RFC 9162
inclusion path in the tree of tree_size events, whose root the checkpoint
signs. prove checks all of it, and the event's id and signature, before it
prints.

With --token (or $CIVNODE_TOKEN, unless --data-dir is given), an owner or
observer token, prove asks the node at --addr, which signs checkpoints of its
current tree only. Without one, prove reads the node of --data-dir: through its API when it runs, else from
the data dir, where --tree-size may name any earlier tree.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil || seq == 0 {
				return usageErrorf("SEQ %q: want the seq of an event, an integer of at least 1", args[0])
			}
			if cmd.Flags().Changed("tree-size") && cfg.treeSize < 1 {
				return usageErrorf("--tree-size must be at least 1")
			}
			var token string
			switch {
			case cfg.token != "" && cmd.Flags().Changed("data-dir"):
				return usageErrorf("give --token to ask a node at --addr, or --data-dir, not both")
			case !cmd.Flags().Changed("data-dir"):
				// An explicit --data-dir wins over a token in the environment.
				token = m.observerToken(cfg.token)
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.prove(cmd.Context(), logger, cfg, token, seq)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&cfg.treeSize, "tree-size", 0, "prove in the tree of the first `N` events (default: the current tree)")
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "the node: its URL with --token, else HOST:PORT of the node running on --data-dir")
	f.StringVar(&cfg.token, "token", "", "an owner or observer token of the node at --addr (default $"+tokenEnv+")")
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	return cmd
}

func (m *Main) prove(ctx context.Context, logger *slog.Logger, cfg proveConfig, token string, seq uint64) (err error) {
	var src treeSource
	if token != "" {
		c, err := newObserverClient(cfg.addr, token)
		if err != nil {
			return err
		}
		defer c.close()
		src = apiSource{c: c}
	} else {
		s, closeSrc, err := m.openLocalSource(ctx, logger, cfg.dataDir, cfg.addr)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := closeSrc(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		src = s
	}
	p, err := buildInclusionProof(ctx, src, seq, cfg.treeSize)
	if err != nil {
		return err
	}
	out, err := p.marshal()
	if err != nil {
		return err
	}
	_, err = m.Stdout.Write(out)
	return err
}

// marshal is the proof as indented JSON, with the event last and exactly as
// stored, not re-indented: those are the bytes the node signed.
func (p *inclusionProof) marshal() ([]byte, error) {
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

// buildInclusionProof assembles and checks the proof of seq in the tree of
// size events, the current tree when size is 0.
func buildInclusionProof(ctx context.Context, src treeSource, seq uint64, size int64) (*inclusionProof, error) {
	vkey, signed, err := src.head(ctx)
	if err != nil {
		return nil, err
	}
	k, err := parseCivnodeKey(vkey)
	if err != nil {
		return nil, fmt.Errorf("the node's %w", err)
	}
	head, err := k.openCheckpoint(signed)
	if err != nil {
		return nil, fmt.Errorf("the node's checkpoint: %w", err)
	}
	switch {
	case size > head.Size:
		return nil, fmt.Errorf("--tree-size %d is beyond the node's tree, which has %d events", size, head.Size)
	case size != 0 && size != head.Size:
		signed, err = src.checkpointAt(ctx, size)
		if errors.Is(err, errCurrentCheckpointOnly) {
			return nil, fmt.Errorf("--tree-size %d: %w (%d events); prove on the data dir of the stopped node, or leave --tree-size out", size, err, head.Size)
		}
		if err != nil {
			return nil, fmt.Errorf("sign the checkpoint of size %d: %w", size, err)
		}
		if head, err = k.openCheckpoint(signed); err != nil {
			return nil, fmt.Errorf("the node's checkpoint of size %d: %w", size, err)
		}
	}
	if seq > uint64(head.Size) {
		return nil, fmt.Errorf("seq %d is beyond the tree, which has %d events", seq, head.Size)
	}
	proof, err := src.inclusion(ctx, seq, head.Size)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d in the tree of size %d: %w", seq, head.Size, err)
	}
	raw, err := src.event(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	id, err := checkEvent(raw, k, seq)
	if err != nil {
		return nil, err
	}
	leaf := tlog.RecordHash(id)
	if err := tlog.CheckRecord(proof, head.Size, head.Root, int64(seq)-1, leaf); err != nil {
		return nil, fmt.Errorf("the proof of seq %d from %s does not lead to the checkpoint's root: %w", seq, src.via(), err)
	}
	if proof == nil {
		proof = []tlog.Hash{} // a tree of one event: [], not null
	}
	return &inclusionProof{
		Checkpoint: string(signed), VerifierKey: vkey,
		Seq: seq, EventID: hex.EncodeToString(id), LeafIndex: int64(seq) - 1, LeafHash: leaf,
		TreeSize: head.Size, RootHash: head.Root, Proof: proof, Event: raw,
	}, nil
}
