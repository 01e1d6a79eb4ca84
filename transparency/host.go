package transparency

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// Host is what Check reads a log from: a node's API (NodeHost) or a static
// host serving what Publish wrote (TilesHost). Either way Check trusts only
// what it verifies.
type Host interface {
	// First is the log's verifier key, to be trusted on first use, and its
	// checkpoint.
	First(ctx context.Context) (vkey string, checkpoint []byte, err error)
	// Checkpoint is the log's current checkpoint.
	Checkpoint(ctx context.Context) ([]byte, error)
	// Consistency is a proof that the tree of head extends the tree of old,
	// which Check verifies with tlog.CheckTree.
	Consistency(ctx context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error)
}

// NodeHost reads a node's transparency endpoints.
func NodeHost(c *Client) Host { return nodeHost{c: c} }

// WitnessedNodeHost reads a node's transparency endpoints and its witnessed
// checkpoint (GET /v1/transparency/checkpoint?witnessed=1), falling back to
// the plain one while it has none.
func WitnessedNodeHost(c *Client) Host { return nodeHost{c: c, witnessed: true} }

type nodeHost struct {
	c         *Client
	witnessed bool
}

func (s nodeHost) First(ctx context.Context) (string, []byte, error) {
	vkey, signed, err := apiSource{s.c}.Head(ctx)
	if err != nil || !s.witnessed {
		return vkey, signed, err
	}
	signed, err = s.witnessedCheckpoint(ctx)
	return vkey, signed, err
}

func (s nodeHost) Checkpoint(ctx context.Context) ([]byte, error) {
	if s.witnessed {
		return s.witnessedCheckpoint(ctx)
	}
	return s.c.get(ctx, "/v1/transparency/checkpoint")
}

func (s nodeHost) Consistency(ctx context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error) {
	return apiSource{s.c}.Consistency(ctx, old.Size, head.Size)
}

// TilesHost reads a C2SP tlog-tiles log from a static host: the checkpoint,
// the verifier-key file Publish writes, and the hash tiles, from which it
// computes the consistency proof itself, as tlog clients do.
func TilesHost(c *Client) Host { return tilesHost{c} }

type tilesHost struct{ c *Client }

func (s tilesHost) First(ctx context.Context) (string, []byte, error) {
	vkey, err := s.c.get(ctx, "/"+VerifierKeyFile)
	if err != nil {
		return "", nil, fmt.Errorf("%w (or give the node's key with --verifier-key)", err)
	}
	signed, err := s.Checkpoint(ctx)
	return strings.TrimSpace(string(vkey)), signed, err
}

func (s tilesHost) Checkpoint(ctx context.Context) ([]byte, error) {
	return s.c.get(ctx, "/"+CheckpointFile)
}

func (s tilesHost) Consistency(ctx context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error) {
	// TileHashReader checks every tile it reads against the new, signed root,
	// so the proof is built from hashes that are in the new tree.
	r := tlog.TileHashReader(tlog.Tree{N: head.Size, Hash: head.Root}, &httpTiles{ctx: ctx, c: s.c})
	proof, err := tlog.ProveTree(head.Size, old.Size, r)
	var fe *tileFetchError
	if errors.As(err, &fe) {
		return nil, fe.err // not served, which says nothing of the tiles
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", s.c.via, errBadTiles, err)
	}
	return proof, nil
}

// httpTiles reads hash tiles over HTTP for tlog.TileHashReader.
type httpTiles struct {
	ctx context.Context
	c   *Client
}

func (h *httpTiles) Height() int { return TileHeight }

func (h *httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := h.c.get(h.ctx, "/"+TilePath(t))
		if err != nil {
			return nil, &tileFetchError{err}
		}
		out[i] = b
	}
	return out, nil
}

func (h *httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}
