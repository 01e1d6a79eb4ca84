package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// checkSource is what check reads a log from: a node's API (nodeCheckSource)
// or a static host serving what publish wrote (tilesCheckSource). Either way
// check trusts only what it verifies.
type checkSource interface {
	// first is the log's verifier key, to be trusted on first use, and its
	// checkpoint.
	first(ctx context.Context) (vkey string, checkpoint []byte, err error)
	// checkpoint is the log's current checkpoint.
	checkpoint(ctx context.Context) ([]byte, error)
	// consistency is a proof that the tree of head extends the tree of old,
	// which check verifies with tlog.CheckTree.
	consistency(ctx context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error)
}

// nodeCheckSource reads a node's transparency endpoints.
type nodeCheckSource struct{ c *apiClient }

func (s nodeCheckSource) first(ctx context.Context) (string, []byte, error) {
	return apiSource{s.c}.head(ctx)
}

func (s nodeCheckSource) checkpoint(ctx context.Context) ([]byte, error) {
	return s.c.get(ctx, "/v1/transparency/checkpoint")
}

func (s nodeCheckSource) consistency(ctx context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error) {
	return apiSource{s.c}.consistency(ctx, old.Size, head.Size)
}

// tilesCheckSource reads a C2SP tlog-tiles log from a static host: the
// checkpoint, the verifier-key file publish writes, and the hash tiles, from
// which it computes the consistency proof itself, as tlog clients do.
type tilesCheckSource struct{ c *apiClient }

func (s tilesCheckSource) first(ctx context.Context) (string, []byte, error) {
	vkey, err := s.c.get(ctx, "/"+publishVerifierKey)
	if err != nil {
		return "", nil, fmt.Errorf("%w (or give the node's key with --verifier-key)", err)
	}
	signed, err := s.checkpoint(ctx)
	return strings.TrimSpace(string(vkey)), signed, err
}

func (s tilesCheckSource) checkpoint(ctx context.Context) ([]byte, error) {
	return s.c.get(ctx, "/"+publishCheckpoint)
}

// errBadTiles is a static host whose tiles are not those of its own
// checkpoint: a broken or half-copied mirror, which proves nothing either way.
var errBadTiles = errors.New("its tiles do not match its checkpoint")

func (s tilesCheckSource) consistency(ctx context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error) {
	// TileHashReader checks every tile it reads against the new, signed root,
	// so the proof is built from hashes that are in the new tree.
	r := tlog.TileHashReader(tlog.Tree{N: head.Size, Hash: head.Root}, &httpTiles{ctx: ctx, c: s.c})
	proof, err := tlog.ProveTree(head.Size, old.Size, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", s.c.via, errBadTiles, err)
	}
	return proof, nil
}

// httpTiles reads hash tiles over HTTP for tlog.TileHashReader.
type httpTiles struct {
	ctx context.Context
	c   *apiClient
}

func (h *httpTiles) Height() int { return tileHeight }

func (h *httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := h.c.get(h.ctx, "/"+tilePath(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (h *httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}
