package witness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// MaxRequestBytes bounds an add-checkpoint body: a checkpoint note and a
// consistency proof of at most 64 hashes fit many times over.
const MaxRequestBytes = 64 << 10

// maxProofHashes is the most hashes a consistency proof of a tree of up to
// 2^63 leaves has, with room to spare.
const maxProofHashes = 128

// RequestError is a refused add-checkpoint request: Status is the HTTP status
// C2SP tlog-witness gives it; Size, for 409, the tree size the witness holds
// for the log, which the answer's text/x.tlog.size body carries.
type RequestError struct {
	Status int
	Size   int64
	Msg    string
}

func (e *RequestError) Error() string { return e.Msg }

func refuse(status int, format string, args ...any) *RequestError {
	return &RequestError{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// Options configure a Witness.
type Options struct {
	// Key is the witness key (DeriveKey) and Name its name (Name).
	Key  ed25519.PrivateKey
	Name string
	// Logs are the note verifier keys of the logs witnessed; a log's origin
	// is its key's name, as for a civnode node (civnode/<did>).
	Logs []string
	// StatePath is the state file: per origin the tree last cosigned.
	StatePath string
	// Cosigner, when set, signs the cosignatures in place of
	// NewCosignatureSigner(Name, Key), which dates them by time.Now: a test
	// dates them by a clock of its own (witnesstest.DatedCosigner). It must
	// sign with Key under Name.
	Cosigner note.Signer
}

// Witness cosigns the checkpoints of the logs it was given (C2SP
// tlog-witness).
type Witness struct {
	signer    note.Signer
	vkey      string
	logs      map[string]logKey // by origin
	statePath string

	mu    sync.Mutex // serializes requests: each reads and replaces the state
	state witnessState
}

type logKey struct {
	vkey     string
	verifier note.Verifier
}

// witnessState is the state file.
type witnessState struct {
	Logs map[string]LogState `json:"logs"`
}

// LogState is what the witness holds for one log: the tree it last cosigned.
type LogState struct {
	TreeSize   int64  `json:"tree_size"`
	RootHash   string `json:"root_hash"`
	CosignedAt string `json:"cosigned_at"`
}

// New opens the witness's state file (none yet is a witness that has
// cosigned nothing) and parses the logs' keys.
func New(opts Options) (*Witness, error) {
	cs, err := NewCosignatureSigner(opts.Name, opts.Key)
	if err != nil {
		return nil, err
	}
	w := &Witness{signer: cs, vkey: cs.VerifierKey(), logs: map[string]logKey{}, statePath: opts.StatePath}
	if c := opts.Cosigner; c != nil {
		if c.Name() != cs.Name() || c.KeyHash() != cs.KeyHash() {
			return nil, fmt.Errorf("the cosigner %s+%08x is not the witness key %s", c.Name(), c.KeyHash(), w.vkey)
		}
		w.signer = c
	}
	for _, vkey := range opts.Logs {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("the verifier key of a witnessed log, %q: %w", vkey, err)
		}
		if _, dup := w.logs[v.Name()]; dup {
			return nil, fmt.Errorf("two verifier keys for the log %s", v.Name())
		}
		w.logs[v.Name()] = logKey{vkey: vkey, verifier: v}
	}
	if _, err := readJSONFile(opts.StatePath, &w.state); err != nil {
		return nil, err
	}
	if w.state.Logs == nil {
		w.state.Logs = map[string]LogState{}
	}
	return w, nil
}

// Name is the witness key's name.
func (w *Witness) Name() string { return w.signer.Name() }

// VerifierKey is the witness's cosignature/v1 verifier key.
func (w *Witness) VerifierKey() string { return w.vkey }

// LogInfo is one witnessed log as GET /v1/witness lists it.
type LogInfo struct {
	Origin      string
	VerifierKey string
	State       *LogState // nil until the witness cosigns a checkpoint of it
}

// Logs lists the witnessed logs by origin.
func (w *Witness) Logs() []LogInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]LogInfo, 0, len(w.logs))
	for origin, k := range w.logs {
		info := LogInfo{Origin: origin, VerifierKey: k.vkey}
		if st, ok := w.state.Logs[origin]; ok {
			info.State = &st
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Origin < out[j].Origin })
	return out
}

// Cosigned is a cosignature given.
type Cosigned struct {
	Origin   string
	TreeSize int64
	Line     string // "— <name> <base64>\n", the answer's body
	// Again is a checkpoint of the very tree the witness held already (same
	// size, same root): it is signed anew, as C2SP allows, but nothing is
	// written, so replaying it costs the witness no fsync and leaves no
	// trace to record.
	Again bool
}

// AddCheckpoint handles one add-checkpoint request body: "old <size>", the
// consistency proof from that size (one base64 hash a line), an empty line,
// the checkpoint note. It cosigns the checkpoint only if it is the log's,
// extends (or equals) the tree last cosigned, and the new state is durable;
// a refusal is a *RequestError. The tree it holds already is cosigned again
// without writing anything (Cosigned.Again).
func (w *Witness) AddCheckpoint(body []byte) (Cosigned, error) {
	old, proof, signed, err := parseRequest(body)
	if err != nil {
		return Cosigned{}, err
	}
	origin, _, _ := strings.Cut(string(signed), "\n")
	k, ok := w.logs[origin]
	if !ok {
		return Cosigned{}, refuse(http.StatusNotFound, "this witness does not witness the log %q", origin)
	}
	n, err := note.Open(signed, note.VerifierList(k.verifier))
	if err != nil {
		return Cosigned{}, refuse(http.StatusForbidden, "the checkpoint is not signed by the log's key %s: %v", k.vkey, err)
	}
	// ParseCheckpointText refuses a size beyond eventlog.MaxTreeSize here,
	// before the lock: tlog's proof check loops for ever on sizes above 2^62
	// and would hold every log's requests behind it.
	head, err := eventlog.ParseCheckpointText(n.Text, origin)
	if err != nil {
		return Cosigned{}, refuse(http.StatusBadRequest, "the checkpoint: %v", err)
	}
	if old > head.Size {
		return Cosigned{}, refuse(http.StatusBadRequest, "old size %d is larger than the checkpoint's size %d", old, head.Size)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	held, known := w.state.Logs[origin]
	if old != held.TreeSize {
		return Cosigned{}, &RequestError{Status: http.StatusConflict, Size: held.TreeSize,
			Msg: fmt.Sprintf("old size %d is not the size this witness holds for %s, %d", old, origin, held.TreeSize)}
	}
	var heldRoot tlog.Hash
	if known {
		if heldRoot, err = decodeHash(held.RootHash); err != nil {
			return Cosigned{}, fmt.Errorf("the witness's state for %s: %w", origin, err)
		}
	}
	switch {
	case old == head.Size && len(proof) != 0:
		return Cosigned{}, refuse(http.StatusUnprocessableEntity, "a proof from size %d to the same size must be empty", old)
	case old == head.Size && old > 0 && head.Root != heldRoot:
		return Cosigned{}, &RequestError{Status: http.StatusConflict, Size: held.TreeSize,
			Msg: fmt.Sprintf("the checkpoint of size %d has root %s; this witness cosigned root %s for that size", old, b64(head.Root), held.RootHash)}
	case old == 0 && len(proof) != 0:
		return Cosigned{}, refuse(http.StatusUnprocessableEntity, "a proof from the empty tree must be empty")
	case old > 0 && old < head.Size:
		if err := tlog.CheckTree(proof, head.Size, head.Root, old, heldRoot); err != nil {
			return Cosigned{}, refuse(http.StatusUnprocessableEntity, "the consistency proof from size %d to %d does not verify: %v", old, head.Size, err)
		}
	}

	sig, err := w.signer.Sign([]byte(n.Text))
	if err != nil {
		return Cosigned{}, err
	}
	raw := make([]byte, 4, 4+len(sig))
	binary.BigEndian.PutUint32(raw, w.signer.KeyHash())
	line := "— " + w.signer.Name() + " " + base64.StdEncoding.EncodeToString(append(raw, sig...)) + "\n"
	if known && head.Size == held.TreeSize && head.Root == heldRoot {
		return Cosigned{Origin: origin, TreeSize: head.Size, Line: line, Again: true}, nil
	}
	next := LogState{TreeSize: head.Size, RootHash: b64(head.Root),
		CosignedAt: time.Unix(int64(binary.BigEndian.Uint64(sig)), 0).UTC().Format(time.RFC3339)}
	logs := make(map[string]LogState, len(w.state.Logs)+1)
	for o, st := range w.state.Logs {
		logs[o] = st
	}
	logs[origin] = next
	// Durable before the answer: a cosignature the witness could forget
	// would let it cosign a conflicting tree after a crash.
	if err := writeJSONFile(w.statePath, witnessState{Logs: logs}); err != nil {
		return Cosigned{}, fmt.Errorf("persist the witness state: %w", err)
	}
	w.state.Logs = logs
	return Cosigned{Origin: origin, TreeSize: head.Size, Line: line}, nil
}

// parseRequest splits an add-checkpoint body.
func parseRequest(body []byte) (old int64, proof tlog.TreeProof, signed []byte, err error) {
	head, rest, ok := bytes.Cut(body, []byte("\n"))
	sizeText, hasPrefix := strings.CutPrefix(string(head), "old ")
	if !ok || !hasPrefix {
		return 0, nil, nil, refuse(http.StatusBadRequest, `the body does not start with "old <size>"`)
	}
	old, err = strconv.ParseInt(sizeText, 10, 64)
	if err != nil || old < 0 || strconv.FormatInt(old, 10) != sizeText {
		return 0, nil, nil, refuse(http.StatusBadRequest, "old size %q is not a decimal number", sizeText)
	}
	// Bounded like the checkpoint's size, so that no size from a request
	// reaches a tlog call unchecked.
	if err := eventlog.CheckTreeSize(old); err != nil {
		return 0, nil, nil, refuse(http.StatusBadRequest, "old size: %v", err)
	}
	for {
		var line []byte
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return 0, nil, nil, refuse(http.StatusBadRequest, "the body has no empty line before the checkpoint")
		}
		if len(line) == 0 {
			break
		}
		if len(proof) == maxProofHashes {
			return 0, nil, nil, refuse(http.StatusBadRequest, "the consistency proof has more than %d hashes", maxProofHashes)
		}
		h, err := decodeHash(string(line))
		if err != nil {
			return 0, nil, nil, refuse(http.StatusBadRequest, "consistency proof line %d: %v", len(proof)+1, err)
		}
		proof = append(proof, h)
	}
	return old, proof, rest, nil
}

func decodeHash(s string) (tlog.Hash, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != tlog.HashSize {
		return tlog.Hash{}, errors.New("not a base64 hash of 32 bytes")
	}
	return tlog.Hash(b), nil
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }
