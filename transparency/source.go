package transparency

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/witness"
)

// Source is where Publish and Prove read the Merkle tree: the event log
// itself when no node runs on the data dir (LogSource), or a node's
// transparency endpoints (APISource). What it returns is checked by the
// caller against a checkpoint verified with the node's key, except what comes
// from the log, which is the node's own store.
type Source interface {
	// Head is the node's verifier key and the signed checkpoint of its
	// current tree.
	Head(ctx context.Context) (vkey string, checkpoint []byte, err error)
	// CheckpointAt is the signed checkpoint of the tree of size events.
	CheckpointAt(ctx context.Context, size int64) ([]byte, error)
	// Tile is the content of a hash tile of height TileHeight.
	Tile(ctx context.Context, t tlog.Tile) ([]byte, error)
	Consistency(ctx context.Context, from, to int64) (tlog.TreeProof, error)
	Inclusion(ctx context.Context, seq uint64, size int64) (tlog.RecordProof, error)
	// Event is the event at seq as stored and served.
	Event(ctx context.Context, seq uint64) ([]byte, error)
	// Witnessed is the node's newest witnessed checkpoint (its note with
	// the witnesses' cosignature lines), nil when it has none. The caller
	// opens it with the node's key and compares it with Head.
	Witnessed(ctx context.Context) ([]byte, error)
	// Events are the n events from seq on, as stored and served.
	Events(ctx context.Context, seq uint64, n int) ([][]byte, error)
	// Seal is the node's seal of its chain (eventlog.Seal): the
	// bundle_signature and the checkpoint of one tree, the one to publish.
	Seal(ctx context.Context) (eventlog.Seal, error)
	// Via names the source in messages.
	Via() string
}

// TileHeight is the height of every tile, as C2SP tlog-tiles fixes it.
const TileHeight = 8

// TilePath is a hash tile's path under a tlog-tiles prefix:
// tile/<L>/<N>[.p/<W>], tlog's Tile.Path without its height.
func TilePath(t tlog.Tile) string {
	return "tile/" + strings.TrimPrefix(t.Path(), "tile/"+strconv.Itoa(TileHeight)+"/")
}

// LogSource reads the tree from the event log of a stopped node; dir names it
// in messages. It has no witnessed checkpoint.
func LogSource(l *eventlog.Log, dir string) Source { return logSource{l: l, dir: dir} }

// WitnessedLogSource is LogSource with the witnessed checkpoint the node kept
// in the state file of its witness submitter (cosignatures, a path that need
// not exist).
func WitnessedLogSource(l *eventlog.Log, dir, cosignatures string) Source {
	return logSource{l: l, dir: dir, cosignatures: cosignatures}
}

type logSource struct {
	l            *eventlog.Log
	dir          string
	cosignatures string
}

func (s logSource) Witnessed(context.Context) ([]byte, error) {
	if s.cosignatures == "" {
		return nil, nil
	}
	w, err := witness.ReadWitnessed(s.cosignatures)
	if err != nil || w == nil {
		return nil, err
	}
	return []byte(w.Checkpoint), nil
}

func (s logSource) Via() string { return s.dir }

func (s logSource) Head(context.Context) (string, []byte, error) {
	_, signed, err := s.l.TreeCheckpoint()
	if err != nil {
		return "", nil, fmt.Errorf("sign the checkpoint: %w", err)
	}
	return s.l.VerifierKey(), signed, nil
}

func (s logSource) CheckpointAt(_ context.Context, size int64) ([]byte, error) {
	_, signed, err := s.l.TreeCheckpointAt(size)
	return signed, err
}

func (s logSource) Tile(_ context.Context, t tlog.Tile) ([]byte, error) { return s.l.TileData(t) }

func (s logSource) Consistency(_ context.Context, from, to int64) (tlog.TreeProof, error) {
	return s.l.ProveConsistency(from, to)
}

func (s logSource) Inclusion(_ context.Context, seq uint64, size int64) (tlog.RecordProof, error) {
	return s.l.ProveInclusion(seq, size)
}

func (s logSource) Event(_ context.Context, seq uint64) ([]byte, error) {
	ev, err := s.l.Event(seq)
	if err != nil {
		return nil, err
	}
	return ev.Raw(), nil
}

func (s logSource) Events(ctx context.Context, seq uint64, n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	err := s.l.Scan(seq, seq+uint64(n)-1, func(ev *eventlog.Event) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		out = append(out, ev.Raw())
		return nil
	})
	if err == nil && len(out) != n {
		err = fmt.Errorf("read events %d..%d from %s: %d of them", seq, seq+uint64(n)-1, s.dir, len(out))
	}
	return out, err
}

func (s logSource) Seal(context.Context) (eventlog.Seal, error) { return s.l.Seal() }

// APISource reads the tree from a node's transparency endpoints.
func APISource(c *Client) Source { return apiSource{c: c} }

type apiSource struct{ c *Client }

func (s apiSource) Via() string { return s.c.via }

// Summary is the answer of GET /v1/transparency.
type Summary struct {
	Origin      string `json:"origin"`
	VerifierKey string `json:"verifier_key"`
	TreeSize    int64  `json:"tree_size"`
	RootHash    string `json:"root_hash"`
	Checkpoint  string `json:"checkpoint"`
	// Witnessed is the node's newest witnessed checkpoint, nil without one.
	Witnessed *struct {
		TreeSize   int64  `json:"tree_size"`
		Checkpoint string `json:"checkpoint"`
	} `json:"witnessed"`
	// Witnesses are the witnesses the node submits to, one status each.
	Witnesses []json.RawMessage `json:"witnesses"`
}

// SubmitsToWitnesses reports whether the node a Source reads through its API
// submits its checkpoints to witnesses; false for any other Source.
func SubmitsToWitnesses(ctx context.Context, src Source) (bool, error) {
	s, ok := src.(apiSource)
	if !ok {
		return false, nil
	}
	var sum Summary
	if err := s.c.getJSON(ctx, "/v1/transparency", &sum); err != nil {
		return false, err
	}
	return len(sum.Witnesses) > 0, nil
}

func (s apiSource) Head(ctx context.Context) (string, []byte, error) {
	var sum Summary
	if err := s.c.getJSON(ctx, "/v1/transparency", &sum); err != nil {
		return "", nil, err
	}
	return sum.VerifierKey, []byte(sum.Checkpoint), nil
}

func (s apiSource) Witnessed(ctx context.Context) ([]byte, error) {
	var sum Summary
	if err := s.c.getJSON(ctx, "/v1/transparency", &sum); err != nil {
		return nil, err
	}
	if sum.Witnessed == nil {
		return nil, nil
	}
	return []byte(sum.Witnessed.Checkpoint), nil
}

func (s apiSource) CheckpointAt(context.Context, int64) ([]byte, error) {
	return nil, ErrCurrentCheckpointOnly
}

func (s apiSource) Tile(ctx context.Context, t tlog.Tile) ([]byte, error) {
	return s.c.get(ctx, "/v1/transparency/"+TilePath(t))
}

func (s apiSource) Consistency(ctx context.Context, from, to int64) (tlog.TreeProof, error) {
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

// InclusionAnswer is the answer of GET /v1/transparency/proof/inclusion.
type InclusionAnswer struct {
	Seq       uint64   `json:"seq"`
	LeafIndex int64    `json:"leaf_index"`
	TreeSize  int64    `json:"tree_size"`
	LeafHash  string   `json:"leaf_hash"`
	RootHash  string   `json:"root_hash"`
	Proof     []string `json:"proof"`
}

func (s apiSource) Inclusion(ctx context.Context, seq uint64, size int64) (tlog.RecordProof, error) {
	var ans InclusionAnswer
	path := "/v1/transparency/proof/inclusion?" + url.Values{"seq": {strconv.FormatUint(seq, 10)}, "tree_size": {itoa(size)}}.Encode()
	if err := s.c.getJSON(ctx, path, &ans); err != nil {
		return nil, err
	}
	if ans.Seq != seq || ans.TreeSize != size {
		return nil, fmt.Errorf("GET %s from %s: the answer proves seq %d in the tree of size %d", path, s.c.via, ans.Seq, ans.TreeSize)
	}
	return decodeHashes(ans.Proof)
}

func (s apiSource) Event(ctx context.Context, seq uint64) ([]byte, error) {
	return streamEvent(ctx, s.c, seq)
}

func (s apiSource) Events(ctx context.Context, seq uint64, n int) ([][]byte, error) {
	return streamEvents(ctx, s.c, seq, n)
}

func (s apiSource) Seal(ctx context.Context) (eventlog.Seal, error) {
	b, err := s.c.get(ctx, "/v1/transparency/seal")
	if err != nil {
		return eventlog.Seal{}, err
	}
	return eventlog.ParseSeal(b)
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
