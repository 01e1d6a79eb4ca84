package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/statemap"
)

// GET /v1/state/proof?key=K (docs/state-proofs.md) proves one record of the
// state map, or its absence, against the root the node's newest
// state.committed event signs, and carries that event with its inclusion
// proof in a checkpoint, so that a verifier holding only the node's verifier
// key (and its witnesses' keys) checks the answer without the chain.

// maxStateKeyBytes bounds a state key: the node's own are at most a kind, a
// slash and a DID or UUID, well under it.
const maxStateKeyBytes = 512

// stateKinds are the kinds of the state map (projections.StateKind*).
var stateKinds = []string{projections.StateKindIdentity, projections.StateKindBinding,
	projections.StateKindProfile, projections.StateKindMission, projections.StateKindTreasury}

// stateProofResponse is GET /v1/state/proof. The embedded proof writes
// siblings, and key_hash with value_hash for an absence that ends at another
// entry, between entries and commitment.
type stateProofResponse struct {
	Key string `json:"key"`
	// Value is the record's stored JCS bytes, written as they are; nil
	// (null) for an absent record.
	Value      json.RawMessage `json:"value"`
	ThroughSeq uint64          `json:"through_seq"`
	StateRoot  statemap.Hash   `json:"state_root"`
	Entries    uint64          `json:"entries"`
	statemap.Proof
	Commitment stateCommitment `json:"commitment"`
}

// stateCommitment is the state.committed event that signs the root, proved
// in a checkpoint: the fields and order of what civnode transparency prove
// prints for it (transparency.Proof), which this package does not import.
type stateCommitment struct {
	Checkpoint  string      `json:"checkpoint"`
	VerifierKey string      `json:"verifier_key"`
	Seq         uint64      `json:"seq"`
	EventID     string      `json:"event_id"`
	LeafIndex   int64       `json:"leaf_index"`
	LeafHash    tlog.Hash   `json:"leaf_hash"`
	TreeSize    int64       `json:"tree_size"`
	RootHash    tlog.Hash   `json:"root_hash"`
	Proof       []tlog.Hash `json:"proof"`
	// Event is the event exactly as stored: the bytes its id and signature
	// cover.
	Event json.RawMessage `json:"event"`
}

// stateProofRoutes registers the route on a server with the read models
// whose records the state map holds, beside which the state tree lives:
// every node's and mirror's.
func (s *Server) stateProofRoutes() {
	if s.identities == nil {
		return
	}
	// The token of the records' own routes (public identity, a mission):
	// owner and agent tokens, not observers.
	s.handle(http.MethodGet, "/v1/state/proof", s.handleStateProof, 0)
}

func (s *Server) handleStateProof(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	if err := onlyParams(q, "key"); err != nil {
		return err
	}
	key, err := queryValue(q, "key")
	if err != nil {
		return err
	}
	if err := checkStateKey(key); err != nil {
		return err
	}
	ans, err := s.proveState(key)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, ans)
}

// checkStateKey checks the key parameter: "<kind>/<id>" with a kind of the
// map, a non-empty id, UTF-8, at most maxStateKeyBytes. An id the map cannot
// hold (one with 0x00) is a well-formed key whose absence the tree proves.
func checkStateKey(key string) error {
	const shape = "<kind>/<id> with a kind of identity, binding, profile, mission or treasury, such as mission/<mission_id>"
	switch {
	case key == "":
		return invalidField("key", "key is required: %s", shape)
	case len(key) > maxStateKeyBytes:
		return invalidField("key", "key is %d bytes, more than %d", len(key), maxStateKeyBytes)
	case !utf8.ValidString(key):
		return invalidField("key", "key is not UTF-8")
	}
	kind, id, ok := projections.SplitStateKey(key)
	if !ok || id == "" || !slices.Contains(stateKinds, kind) {
		return invalidField("key", "key must be %s", shape)
	}
	return nil
}

// proveState assembles the answer for key. The tree's commit, its proof and
// the value are read in one view, so they are of one round. The view is
// the live models' (DerivedView), not the durable snapshot a ModelView
// shares: the committer writes the tree after the state.committed event is
// durable, and a ModelView taken since shows that write only once another
// event is appended, so on a quiet node it would not show the newest
// commitment, or any. The tree's write may not be synced yet, but nothing
// the answer says can be taken back by a crash: the tree is a function of
// events through ThroughSeq, which are durable, and the event at
// CommitmentSeq that signs it was durable before the tree was written; a
// node that loses the write derives the same tree again.
func (s *Server) proveState(key string) (*stateProofResponse, error) {
	v, err := s.log.DerivedView()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	c, err := projections.StateTreeCommit(v)
	if err != nil {
		return nil, err
	}
	if c.CommitmentSeq == 0 {
		why := "no state.committed event signs its state tree"
		if s.mirror != nil || s.log.ReadOnly() {
			why = "the mirror has derived no state.committed of the origin yet"
		}
		return nil, errStateNotCommitted(why)
	}
	value, proof, err := projections.ProveState(s.log, v, key)
	if err != nil {
		return nil, err
	}
	commitment, signed, err := s.stateCommitment(c.CommitmentSeq)
	if err != nil {
		return nil, err
	}
	// The answer's root is the event's: a round that found the root
	// unchanged keeps the commitment signed before and moves the tree's
	// ThroughSeq past the payload's, which a verifier compares with.
	if signed.StateRoot != c.Root.String() || signed.Entries != c.Entries || signed.ThroughSeq > c.ThroughSeq {
		return nil, fmt.Errorf("the state tree (root %s, %d entries, through %d) is not the one %s at seq %d signs (%+v)",
			c.Root, c.Entries, c.ThroughSeq, events.TypeStateCommitted, c.CommitmentSeq, signed)
	}
	return &stateProofResponse{Key: key, Value: value, ThroughSeq: signed.ThroughSeq, StateRoot: c.Root,
		Entries: c.Entries, Proof: proof, Commitment: *commitment}, nil
}

// stateCommitment proves the event at seq in the checkpoint proofs are given
// against: the newest witnessed one where the node has witnesses, else the
// node's newest. It checks what it assembles, as civnode transparency prove
// does: an answer that does not verify is the node's fault, never sent.
func (s *Server) stateCommitment(seq uint64) (*stateCommitment, events.StateCommitted, error) {
	var p events.StateCommitted
	note, head, err := s.commitmentCheckpoint(seq)
	if err != nil {
		return nil, p, err
	}
	ev, err := s.log.Event(seq)
	if err != nil {
		return nil, p, err
	}
	if ev.Type != events.TypeStateCommitted {
		return nil, p, fmt.Errorf("the state tree's commitment at seq %d is a %s event", seq, ev.Type)
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return nil, p, fmt.Errorf("%s at seq %d: %w", events.TypeStateCommitted, seq, err)
	}
	proof, err := s.log.ProveInclusion(seq, head.Size)
	if err != nil {
		return nil, p, err
	}
	leaf, err := s.log.LeafHash(seq)
	if err != nil {
		return nil, p, err
	}
	if err := tlog.CheckRecord(proof, head.Size, head.Root, int64(seq)-1, leaf); err != nil {
		return nil, p, fmt.Errorf("the inclusion proof of %s at seq %d does not lead to the checkpoint's root: %w", events.TypeStateCommitted, seq, err)
	}
	if proof == nil {
		proof = []tlog.Hash{} // a tree of one event: [], not null
	}
	return &stateCommitment{Checkpoint: note, VerifierKey: s.log.VerifierKey(), Seq: seq, EventID: ev.ID,
		LeafIndex: int64(seq) - 1, LeafHash: leaf, TreeSize: head.Size, RootHash: head.Root, Proof: proof,
		Event: ev.Raw()}, p, nil
}

// commitmentCheckpoint is the signed checkpoint to prove the event at seq
// in, and the tree head it names; state_not_committed when it does not
// cover seq (a witnessed checkpoint not yet cosigned that far).
func (s *Server) commitmentCheckpoint(seq uint64) (string, eventlog.TreeHead, error) {
	wc := s.witnessed()
	if s.witnesses == nil && (wc == nil || wc.TreeSize < int64(seq)) {
		// A node without witnesses, or a mirror whose origin's witnessed
		// checkpoint does not cover seq: the checkpoint of the tree held.
		head, signed, err := s.log.TreeCheckpoint()
		if err != nil {
			return "", eventlog.TreeHead{}, err
		}
		if head.Size < int64(seq) {
			return "", eventlog.TreeHead{}, errStateNotCommitted("the checkpoint does not cover the commitment yet")
		}
		return string(signed), head, nil
	}
	if wc == nil || wc.TreeSize < int64(seq) {
		return "", eventlog.TreeHead{}, errStateNotCommitted("no witnessed checkpoint covers the commitment yet")
	}
	// The note's text ends at its first blank line; the signature lines,
	// the node's and the witnesses', follow it.
	text, _, ok := strings.Cut(wc.Checkpoint, "\n\n")
	if !ok {
		return "", eventlog.TreeHead{}, errors.New("the witnessed checkpoint is not a signed note")
	}
	head, err := eventlog.ParseCheckpointText(text+"\n", s.log.Origin())
	if err != nil {
		return "", eventlog.TreeHead{}, fmt.Errorf("the witnessed checkpoint: %w", err)
	}
	if head.Size != wc.TreeSize {
		return "", eventlog.TreeHead{}, fmt.Errorf("the witnessed checkpoint names %d events, its record %d", head.Size, wc.TreeSize)
	}
	return wc.Checkpoint, head, nil
}
