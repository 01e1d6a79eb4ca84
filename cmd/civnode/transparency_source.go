package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// treeSource is where publish and prove read the Merkle tree: the event log
// itself when no node runs on the data dir (logSource), or a node's
// transparency endpoints (apiSource). What it returns is checked by the
// caller against a checkpoint verified with the node's key, except what
// comes from the log, which is the node's own store.
type treeSource interface {
	// head is the node's verifier key and the signed checkpoint of its
	// current tree.
	head(ctx context.Context) (vkey string, checkpoint []byte, err error)
	// checkpointAt is the signed checkpoint of the tree of size events.
	checkpointAt(ctx context.Context, size int64) ([]byte, error)
	// tile is the content of a hash tile of height 8.
	tile(ctx context.Context, t tlog.Tile) ([]byte, error)
	consistency(ctx context.Context, from, to int64) (tlog.TreeProof, error)
	inclusion(ctx context.Context, seq uint64, size int64) (tlog.RecordProof, error)
	// event is the event at seq as stored and served.
	event(ctx context.Context, seq uint64) ([]byte, error)
	// via names the source in messages.
	via() string
}

// tileHeight is the height of every tile, as C2SP tlog-tiles fixes it.
const tileHeight = 8

// tilePath is a hash tile's path under a tlog-tiles prefix:
// tile/<L>/<N>[.p/<W>], tlog's Tile.Path without its height.
func tilePath(t tlog.Tile) string {
	return "tile/" + strings.TrimPrefix(t.Path(), "tile/"+strconv.Itoa(tileHeight)+"/")
}

// openLocalSource opens the tree of the node of a data dir: through the
// running node's API when one holds the data dir (reached as token and
// wallet reach it, nodechannel.go), else the log itself. The caller calls
// closeFn.
func (m *Main) openLocalSource(ctx context.Context, logger *slog.Logger, dataDirFlag, addr string) (src treeSource, closeFn func() error, err error) {
	dir, err := datadir.Resolve(dataDirFlag, m.Getenv, m.HomeDir)
	if err != nil {
		return nil, nil, err
	}
	l, err := openChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		ch, err := openNodeChannel(ctx, dir, addr, logger)
		if err != nil {
			return nil, nil, err
		}
		logger.Debug("a node runs on the data dir; reading its tree through its API", "via", ch.Via)
		return apiSource{c: channelClient(ch)}, func() error { ch.Close(); return nil }, nil
	}
	if err != nil {
		return nil, nil, err
	}
	closeFn = func() error {
		if err := l.Close(); err != nil {
			return fmt.Errorf("close event log: %w", err)
		}
		return nil
	}
	return logSource{l: l, dir: string(dir)}, closeFn, nil
}

// logSource reads the tree from the event log of a stopped node.
type logSource struct {
	l   *eventlog.Log
	dir string
}

func (s logSource) via() string { return s.dir }

func (s logSource) head(context.Context) (string, []byte, error) {
	_, signed, err := s.l.TreeCheckpoint()
	if err != nil {
		return "", nil, fmt.Errorf("sign the checkpoint: %w", err)
	}
	return s.l.VerifierKey(), signed, nil
}

func (s logSource) checkpointAt(_ context.Context, size int64) ([]byte, error) {
	_, signed, err := s.l.TreeCheckpointAt(size)
	return signed, err
}

func (s logSource) tile(_ context.Context, t tlog.Tile) ([]byte, error) { return s.l.TileData(t) }

func (s logSource) consistency(_ context.Context, from, to int64) (tlog.TreeProof, error) {
	return s.l.ProveConsistency(from, to)
}

func (s logSource) inclusion(_ context.Context, seq uint64, size int64) (tlog.RecordProof, error) {
	return s.l.ProveInclusion(seq, size)
}

func (s logSource) event(_ context.Context, seq uint64) ([]byte, error) {
	ev, err := s.l.Event(seq)
	if err != nil {
		return nil, err
	}
	return ev.Raw(), nil
}

// apiSource reads the tree from a node's transparency endpoints.
type apiSource struct{ c *apiClient }

func (s apiSource) via() string { return s.c.via }

// transparencySummary is the answer of GET /v1/transparency.
type transparencySummary struct {
	Origin      string `json:"origin"`
	VerifierKey string `json:"verifier_key"`
	TreeSize    int64  `json:"tree_size"`
	RootHash    string `json:"root_hash"`
	Checkpoint  string `json:"checkpoint"`
}

func (s apiSource) head(ctx context.Context) (string, []byte, error) {
	var sum transparencySummary
	if err := s.c.getJSON(ctx, "/v1/transparency", &sum); err != nil {
		return "", nil, err
	}
	return sum.VerifierKey, []byte(sum.Checkpoint), nil
}

// errCurrentCheckpointOnly: a node signs checkpoints over its API for its
// current tree only, so that a token cannot make it sign at will.
var errCurrentCheckpointOnly = errors.New("the node's API serves the checkpoint of its current tree only")

func (s apiSource) checkpointAt(context.Context, int64) ([]byte, error) {
	return nil, errCurrentCheckpointOnly
}

func (s apiSource) tile(ctx context.Context, t tlog.Tile) ([]byte, error) {
	return s.c.get(ctx, "/v1/transparency/"+tilePath(t))
}

func (s apiSource) consistency(ctx context.Context, from, to int64) (tlog.TreeProof, error) {
	var ans struct {
		From  int64    `json:"from"`
		To    int64    `json:"to"`
		Proof []string `json:"proof"`
	}
	path := "/v1/transparency/proof/consistency?" + url.Values{"from": {itoa(from)}, "to": {itoa(to)}}.Encode()
	if err := s.c.getJSON(ctx, path, &ans); err != nil {
		return nil, err
	}
	if ans.From != from || ans.To != to {
		return nil, fmt.Errorf("GET %s from %s: the answer is a proof from %d to %d", path, s.c.via, ans.From, ans.To)
	}
	return decodeHashes(ans.Proof)
}

// inclusionAnswer is the answer of GET /v1/transparency/proof/inclusion.
type inclusionAnswer struct {
	Seq       uint64   `json:"seq"`
	LeafIndex int64    `json:"leaf_index"`
	TreeSize  int64    `json:"tree_size"`
	LeafHash  string   `json:"leaf_hash"`
	RootHash  string   `json:"root_hash"`
	Proof     []string `json:"proof"`
}

func (s apiSource) inclusion(ctx context.Context, seq uint64, size int64) (tlog.RecordProof, error) {
	var ans inclusionAnswer
	path := "/v1/transparency/proof/inclusion?" + url.Values{"seq": {strconv.FormatUint(seq, 10)}, "tree_size": {itoa(size)}}.Encode()
	if err := s.c.getJSON(ctx, path, &ans); err != nil {
		return nil, err
	}
	if ans.Seq != seq || ans.TreeSize != size {
		return nil, fmt.Errorf("GET %s from %s: the answer proves seq %d in the tree of size %d", path, s.c.via, ans.Seq, ans.TreeSize)
	}
	return decodeHashes(ans.Proof)
}

func (s apiSource) event(ctx context.Context, seq uint64) ([]byte, error) {
	return streamEvent(ctx, s.c, seq)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// decodeHashes decodes a proof: base64 hashes of 32 bytes.
func decodeHashes(ss []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		b, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d, %q, is not 32 bytes of base64", i, s)
		}
		out[i] = tlog.Hash(b)
	}
	return out, nil
}
