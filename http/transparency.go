package http

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/witness"
)

// The transparency log (docs/transparency.md): the Merkle tree the log keeps beside the
// chain, its signed checkpoint, proofs and C2SP hash tiles. Every answer is
// read from the tree as durable at the request; docs/transparency.md shows an
// observer using them.

// tileHeight is the height of every tile served (C2SP tlog-tiles).
const tileHeight = 8

// Cache-Control of a tile: its path names its content, full or partial.
const tileCacheControl = "public, max-age=31536000, immutable"

func (s *Server) transparencyRoutes() {
	const flags = routeObserver | routeNoAgent | routeLimited
	s.handle(http.MethodGet, "/v1/transparency", s.handleTransparency, flags)
	s.handle(http.MethodGet, "/v1/transparency/checkpoint", s.handleCheckpoint, flags)
	s.handle(http.MethodGet, "/v1/transparency/proof/inclusion", s.handleInclusionProof, flags)
	s.handle(http.MethodGet, "/v1/transparency/proof/consistency", s.handleConsistencyProof, flags)
	s.handle(http.MethodGet, "/v1/transparency/tile/*tile", s.handleTile, flags)
	s.handle(http.MethodGet, "/v1/transparency/seal", s.handleSeal, flags)
	// A bundle may be far larger than a page (256 of the largest events the
	// log stores), so it is streamed, not buffered: no handler timeout, each
	// write bounded instead (handleEventBundle).
	s.handle(http.MethodGet, "/v1/transparency/events/*bundle", s.handleEventBundle, flags|routeStreaming)
}

type transparencyResponse struct {
	Origin      string `json:"origin"`
	VerifierKey string `json:"verifier_key"`
	TreeSize    int64  `json:"tree_size"`
	RootHash    string `json:"root_hash"`
	Checkpoint  string `json:"checkpoint"`
	// Witnessed is the newest checkpoint with a quorum of cosignatures, null
	// while there is none; Witnesses the status of each witness the node
	// submits to, [] when it has none (docs/transparency.md, Witnessing).
	Witnessed *witness.Witnessed `json:"witnessed"`
	Witnesses []witnessStatus    `json:"witnesses"`
	// Mirror is how a mirror follows its source (mirror.go), absent on a
	// node of its own chain.
	Mirror *MirrorStatus `json:"mirror,omitempty"`
	// ForkGuard is whether the node appends (a node's own chain only): a
	// node that has seen a checkpoint of its own key that its chain does
	// not cover holds its writes (docs/operations.md, The fork guard).
	ForkGuard *forkGuardStatus `json:"fork_guard,omitempty"`
}

type forkGuardStatus struct {
	Writable bool `json:"writable"`
	// Reason, Seen and SeenTreeSize say why it does not: behind, forked,
	// waiting or superseded, where, and the tree size seen there.
	Reason       string `json:"reason,omitempty"`
	Seen         string `json:"seen,omitempty"`
	SeenTreeSize int64  `json:"seen_tree_size,omitempty"`
	Message      string `json:"message,omitempty"`
	// Note is what the guard last learnt besides (Options.ForkGuard).
	Note string `json:"note,omitempty"`
}

// forkGuardStatus is the fork_guard member, nil on a mirror.
func (s *Server) forkGuardStatus() *forkGuardStatus {
	if s.log.ReadOnly() {
		return nil
	}
	st := &forkGuardStatus{Writable: true}
	if b := s.log.Held(); b != nil {
		st = &forkGuardStatus{Reason: b.Reason, Seen: b.Seen, SeenTreeSize: b.Size, Message: b.Message()}
	}
	if s.forkGuard != nil {
		st.Note = s.forkGuard()
	}
	return st
}

type witnessStatus struct {
	Name         string  `json:"name"`
	VerifierKey  string  `json:"verifier_key"`
	URL          string  `json:"url"`
	CosignedSize int64   `json:"cosigned_size"`
	CosignedAt   *string `json:"cosigned_at"`
	LastError    *string `json:"last_error"`
}

// witnessStatuses are the witnesses' status lines, [] without witnesses.
func (s *Server) witnessStatuses() []witnessStatus {
	out := []witnessStatus{}
	if s.witnesses == nil {
		return out
	}
	for _, st := range s.witnesses.Statuses() {
		out = append(out, witnessStatus{Name: st.Name, VerifierKey: st.VerifierKey, URL: st.URL,
			CosignedSize: st.CosignedSize, CosignedAt: nonEmpty(st.CosignedAt), LastError: nonEmpty(st.LastError)})
	}
	return out
}

// witnessed is the newest witnessed checkpoint, nil without one: on a
// mirror, the origin's it holds.
func (s *Server) witnessed() *witness.Witnessed {
	if s.mirror != nil {
		return s.mirror.Witnessed()
	}
	if s.witnesses == nil {
		return nil
	}
	return s.witnesses.Witnessed()
}

func nonEmpty(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// emptyTreeRoot is the root of the tree of no leaves, RFC 9162's SHA-256 of
// nothing.
var emptyTreeRoot = sha256.Sum256(nil)

// handleTransparency answers GET /v1/transparency with the tree head and its
// signed checkpoint.
func (s *Server) handleTransparency(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	head, note, err := s.log.TreeCheckpoint()
	if err != nil && s.mirror != nil && errors.Is(err, eventlog.ErrNotFound) {
		// A mirror that holds no checkpoint of the origin yet (its source
		// is down, or its first tree waits for cosignatures) still says how
		// its following goes: the empty tree, with no checkpoint.
		head, note, err = eventlog.TreeHead{Root: emptyTreeRoot}, nil, nil
	}
	if err != nil {
		return err
	}
	return writeJSON(w, transparencyResponse{
		Origin: s.log.Origin(), VerifierKey: s.log.VerifierKey(),
		TreeSize: head.Size, RootHash: b64(head.Root), Checkpoint: string(note),
		Witnessed: s.witnessed(), Witnesses: s.witnessStatuses(), Mirror: s.mirrorStatus(), ForkGuard: s.forkGuardStatus(),
	})
}

// handleCheckpoint answers GET /v1/transparency/checkpoint with the signed
// note alone, as the C2SP tlog-checkpoint endpoint of a log serves it; with
// ?witnessed=1, the newest witnessed checkpoint, cosignatures included.
func (s *Server) handleCheckpoint(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	if err := onlyParams(q, "witnessed"); err != nil {
		return err
	}
	v, err := queryValue(q, "witnessed")
	if err != nil {
		return err
	}
	var note []byte
	switch v {
	case "", "0":
		if _, note, err = s.log.TreeCheckpoint(); err != nil {
			return err
		}
	case "1":
		wc := s.witnessed()
		if wc == nil && s.mirror != nil {
			return errMirrorNotWitnessed
		}
		if wc == nil {
			return errNotWitnessed(s.witnesses != nil)
		}
		note = []byte(wc.Checkpoint)
	default:
		return invalidField("witnessed", "witnessed must be 1 (the witnessed checkpoint) or 0")
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(note)
	return nil
}

type inclusionResponse struct {
	Seq       uint64   `json:"seq"`
	LeafIndex int64    `json:"leaf_index"`
	TreeSize  int64    `json:"tree_size"`
	LeafHash  string   `json:"leaf_hash"`
	RootHash  string   `json:"root_hash"`
	Proof     []string `json:"proof"`
}

// handleInclusionProof answers GET /v1/transparency/proof/inclusion?seq=S[&tree_size=N].
func (s *Server) handleInclusionProof(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	if err := onlyParams(q, "seq", "tree_size"); err != nil {
		return err
	}
	size := s.log.TreeSize() // read once: the tree may grow during the request
	seq, err := treeParam(q, "seq", true)
	if err != nil {
		return err
	}
	if n, err := treeParam(q, "tree_size", false); err != nil {
		return err
	} else if n != 0 {
		if n > size {
			return invalidField("tree_size", "tree_size %d is beyond the tree, which has %d events", n, size)
		}
		size = n
	}
	if seq > size {
		return invalidField("seq", "seq %d is not in a tree of %d events", seq, size)
	}
	proof, err := s.log.ProveInclusion(uint64(seq), size)
	if err != nil {
		return err
	}
	leaf, err := s.log.LeafHash(uint64(seq))
	if err != nil {
		return err
	}
	root, err := s.log.TreeRoot(size)
	if err != nil {
		return err
	}
	return writeJSON(w, inclusionResponse{Seq: uint64(seq), LeafIndex: seq - 1, TreeSize: size,
		LeafHash: b64(leaf), RootHash: b64(root), Proof: b64s(proof)})
}

type consistencyResponse struct {
	From  int64    `json:"from"`
	To    int64    `json:"to"`
	Proof []string `json:"proof"`
}

// handleConsistencyProof answers GET /v1/transparency/proof/consistency?from=A&to=B.
func (s *Server) handleConsistencyProof(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	if err := onlyParams(q, "from", "to"); err != nil {
		return err
	}
	size := s.log.TreeSize()
	from, err := treeParam(q, "from", true)
	if err != nil {
		return err
	}
	to, err := treeParam(q, "to", true)
	if err != nil {
		return err
	}
	if to > size {
		return invalidField("to", "to %d is beyond the tree, which has %d events", to, size)
	}
	if from > to {
		return invalidField("from", "from %d is greater than to %d", from, to)
	}
	proof, err := s.log.ProveConsistency(from, to)
	if err != nil {
		return err
	}
	return writeJSON(w, consistencyResponse{From: from, To: to, Proof: b64s(proof)})
}

// handleTile answers GET /v1/transparency/tile/<L>/<N>[.p/<W>] with the hash
// tile's bytes (C2SP tlog-tiles, height 8; entry tiles are not served: the
// leaves are event ids, which GET /v1/events serves with the events).
func (s *Server) handleTile(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	rest := strings.TrimPrefix(ps.ByName("tile"), "/")
	t, err := tlog.ParseTilePath("tile/" + strconv.Itoa(tileHeight) + "/" + rest)
	if err != nil || t.L < 0 || strings.HasPrefix(rest, "data/") {
		return invalidField("tile", "%q is not a hash tile path such as 0/x001/234 or 1/005.p/17", rest)
	}
	data, err := s.log.TileData(t)
	if errors.Is(err, eventlog.ErrBeyondTree) {
		return tileNotFound(rest, s.log.TreeSize())
	}
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", tileCacheControl)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
	return nil
}

// handleSeal answers GET /v1/transparency/seal with the node's seal of its
// chain (the bundle_signature and checkpoint an export of it carries), which
// transparency publish writes beside the checkpoint for mirrors; a mirror
// answers with the origin's.
func (s *Server) handleSeal(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	seal, err := s.log.Seal()
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, seal)
}

// bundleSize is the number of events of a full event bundle: those of one
// level-0 tile.
const bundleSize = 1 << tileHeight

// handleEventBundle answers GET /v1/transparency/events/<N>[.p/<W>] with the
// event bundle of leaves 256·N … 256·N+W−1, the events as stored, one a line,
// as transparency publish writes it for static hosts and mirrors.
func (s *Server) handleEventBundle(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	rest := strings.TrimPrefix(ps.ByName("bundle"), "/")
	t, err := tlog.ParseTilePath("tile/" + strconv.Itoa(tileHeight) + "/0/" + rest)
	if err != nil || strings.Contains(rest, "data/") {
		return invalidField("bundle", "%q is not an event bundle path such as x001/234 or 005.p/17", rest)
	}
	size := s.log.TreeSize()
	first := t.N * bundleSize
	if first+int64(t.W) > size {
		return &Error{Status: http.StatusNotFound, Code: codeTileNotFound,
			Message: fmt.Sprintf("event bundle %s is beyond the tree, which has %d events", rest, size)}
	}
	// The bundle is sent as it is read, never held whole: 256 of the largest
	// events the log stores (eventlog.MaxEventSize) would be half a gigabyte.
	// A first pass over the same events, immutable once stored, gives the
	// Content-Length that a static host of the same bundle sends.
	from, to := uint64(first)+1, uint64(first)+uint64(t.W)
	var length int64
	err = s.log.ScanRaw(r.Context(), from, to, func(_ uint64, raw []byte) error {
		length += int64(len(raw)) + 1
		return nil
	})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", tileCacheControl)
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	// Each write must make progress within exportWriteIdle, as an export's
	// do: a client that stops reading is cut off, one that reads slowly is not.
	wire := &deadlineWriter{w: w, rc: http.NewResponseController(w), idle: s.exportWriteIdle}
	err = s.log.ScanRaw(r.Context(), from, to, func(_ uint64, raw []byte) error {
		if _, err := wire.Write(raw); err != nil {
			return err
		}
		_, err := wire.Write(newline)
		return err
	})
	if err != nil {
		if r.Context().Err() == nil {
			s.logger.LogAttrs(r.Context(), slog.LevelWarn, "event bundle cut short",
				slog.Uint64(logkey.FromSeq, from), slog.Int64(logkey.BytesSent, wire.n), slog.String(logkey.Err, err.Error()))
		}
		// The header is sent: cutting the connection is how the client
		// learns that the body is short of its Content-Length.
		panic(http.ErrAbortHandler)
	}
	return nil
}

var newline = []byte{'\n'}

// treeParam parses a tree size, seq or bound: a decimal integer from 1 to
// 2^63-1, digits only. A required parameter that is absent is 400 too.
func treeParam(q url.Values, name string, required bool) (int64, error) {
	v, err := queryValue(q, name)
	if err != nil {
		return 0, err
	}
	if v == "" {
		if required {
			return 0, invalidField(name, "%s is required", name)
		}
		return 0, nil
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, invalidField(name, "%s must be an integer of at least 1", name)
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, invalidField(name, "%s must be an integer of at least 1", name)
	}
	return n, nil
}

// onlyParams refuses a query parameter the endpoint does not take: a typo
// such as tree-size must not silently prove against the current tree.
func onlyParams(q url.Values, names ...string) error {
	for name := range q {
		known := false
		for _, n := range names {
			known = known || name == n
		}
		if !known {
			return invalidQuery(echoName(name), "unknown query parameter %s; this endpoint takes %s", echoName(name), strings.Join(names, ", "))
		}
	}
	return nil
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }

func b64s(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = b64(h)
	}
	return out
}
