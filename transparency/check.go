package transparency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// CheckOptions say where Check keeps its state and which key it expects.
type CheckOptions struct {
	// State is the state file: the trusted key and the last verified
	// checkpoint, created by the first run with mode 0600. Evidence files go
	// beside it.
	State string
	// VerifierKey, when set, is the key to expect instead of trusting the
	// first one seen.
	VerifierKey string
	// Witnesses, when set, are the cosignature/v1 verifier keys of the
	// witnesses whose cosignatures a checkpoint must carry, Quorum of them
	// (default 1), none older than MaxAge (default DefaultMaxAge); a
	// checkpoint without them is ErrNotWitnessed.
	Witnesses []string
	Quorum    int
	MaxAge    time.Duration
}

// Report is Check's result, printed as one JSON object by civnode
// transparency check --json.
type Report struct {
	// Result is trusted (first run), consistent, unchanged, or the problem:
	// forked, rolled_back, another_key, not_witnessed; error for any other
	// failure.
	Result           string `json:"result"`
	Origin           string `json:"origin,omitempty"`
	VerifierKey      string `json:"verifier_key,omitempty"`
	OldSize          int64  `json:"old_size"`
	TreeSize         int64  `json:"tree_size"`
	RootHash         string `json:"root_hash,omitempty"`
	BytesTransferred int64  `json:"bytes_transferred"`
	Evidence         string `json:"evidence,omitempty"`
	Error            string `json:"error,omitempty"`
}

// Check runs one check of the log host serves (at url, recorded in the state
// file and the evidence); the report says what it found also when the error
// is one of the problems.
func Check(ctx context.Context, host Host, url string, opts CheckOptions) (Report, error) {
	st, err := loadState(opts.State)
	if err != nil {
		return Report{}, err
	}
	if st == nil {
		return firstCheck(ctx, host, url, opts)
	}
	k, stored, err := st.open()
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", opts.State, err)
	}
	rep := Report{Origin: k.Origin, VerifierKey: k.VerifierKey, OldSize: stored.Size}
	if opts.VerifierKey != "" && opts.VerifierKey != k.VerifierKey {
		return rep, fmt.Errorf("%s holds the key %s, not --verifier-key %s; use another state file for another key", opts.State, k.VerifierKey, opts.VerifierKey)
	}
	signed, err := host.Checkpoint(ctx)
	if err != nil {
		return rep, err
	}
	head, err := k.OpenCheckpoint(signed)
	if err != nil {
		if errors.Is(err, ErrAnotherKey) {
			rep.Result = "another_key"
			return rep, withEvidence(opts, url, st, signed, nil, &rep, err)
		}
		return rep, err
	}
	rep.TreeSize, rep.RootHash = head.Size, B64(head.Root)
	var proof tlog.TreeProof
	switch {
	case head.Size < stored.Size:
		rep.Result = "rolled_back"
		err = fmt.Errorf("%w: the node's checkpoint has %d events, the one stored in %s has %d", ErrRolledBack, head.Size, opts.State, stored.Size)
	case head.Size == stored.Size && head.Root != stored.Root:
		rep.Result = "forked"
		err = fmt.Errorf("%w: the node signed a tree of %d events with root %s, and earlier one of the same size with root %s",
			ErrForked, head.Size, B64(head.Root), B64(stored.Root))
	case head.Size == stored.Size:
		rep.Result = "unchanged"
	case stored.Size == 0:
		rep.Result = "consistent" // every tree extends the empty one
	default:
		proof, err = host.Consistency(ctx, stored, head)
		if err != nil {
			return rep, fmt.Errorf("fetch the consistency proof from %d to %d events: %w", stored.Size, head.Size, err)
		}
		if cerr := tlog.CheckTree(proof, head.Size, head.Root, stored.Size, stored.Root); cerr != nil {
			rep.Result = "forked"
			err = fmt.Errorf("%w: the node's tree of %d events does not extend the tree of %d events stored in %s (%v)",
				ErrForked, head.Size, stored.Size, opts.State, cerr)
		} else {
			rep.Result = "consistent"
		}
	}
	if err == nil && len(opts.Witnesses) > 0 {
		if err = checkWitnessed(signed, opts, time.Now()); errors.Is(err, ErrNotWitnessed) {
			rep.Result = "not_witnessed"
		} else if err != nil {
			return rep, err
		}
	}
	if err != nil {
		return rep, withEvidence(opts, url, st, signed, proof, &rep, err)
	}
	return rep, saveState(opts.State, State{VerifierKey: k.VerifierKey, Checkpoint: string(signed), URL: url})
}

// firstCheck trusts the host's key on first use, or checks it against
// opts.VerifierKey, and stores the verified checkpoint.
func firstCheck(ctx context.Context, host Host, url string, opts CheckOptions) (Report, error) {
	var vkey string
	var signed []byte
	var err error
	if opts.VerifierKey != "" {
		vkey = opts.VerifierKey
		signed, err = host.Checkpoint(ctx)
	} else {
		vkey, signed, err = host.First(ctx)
	}
	if err != nil {
		return Report{}, err
	}
	k, err := ParseKey(vkey)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Origin: k.Origin, VerifierKey: vkey}
	head, err := k.OpenCheckpoint(signed)
	if errors.Is(err, ErrAnotherKey) {
		rep.Result = "another_key"
	}
	if err != nil {
		return rep, err
	}
	rep.TreeSize, rep.RootHash = head.Size, B64(head.Root)
	if len(opts.Witnesses) > 0 {
		if err := checkWitnessed(signed, opts, time.Now()); err != nil {
			if errors.Is(err, ErrNotWitnessed) {
				rep.Result = "not_witnessed"
				st := &State{VerifierKey: vkey}
				return rep, withEvidence(opts, url, st, signed, nil, &rep, err)
			}
			return rep, err
		}
	}
	rep.Result = "trusted"
	return rep, saveState(opts.State, State{VerifierKey: vkey, Checkpoint: string(signed), URL: url})
}

// State is the state file: the trusted key and the last checkpoint Check
// verified. URL and CheckedAt are for people; Check reads neither.
type State struct {
	VerifierKey string `json:"verifier_key"`
	Checkpoint  string `json:"checkpoint"`
	URL         string `json:"url,omitempty"`
	CheckedAt   string `json:"checked_at,omitempty"`
}

// open verifies the stored checkpoint with the stored key: a state file
// edited by hand must not become the start of the next check.
func (s *State) open() (Key, eventlog.TreeHead, error) {
	k, err := ParseKey(s.VerifierKey)
	if err != nil {
		return Key{}, eventlog.TreeHead{}, err
	}
	head, err := k.OpenCheckpoint([]byte(s.Checkpoint))
	if err != nil {
		return Key{}, eventlog.TreeHead{}, fmt.Errorf("the stored checkpoint: %w", err)
	}
	return k, head, nil
}

// loadState reads the state file, nil when there is none yet.
func loadState(path string) (*State, error) {
	b, err := readOptionalFile(path)
	if err != nil || b == nil {
		return nil, err
	}
	var st State
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("read the state file %s: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("read the state file %s: more than one JSON object", path)
	}
	return &st, nil
}

func saveState(path string, st State) error {
	st.CheckedAt = time.Now().UTC().Format(time.RFC3339)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the state: %w", err)
	}
	return writeStateFile(path, append(b, '\n'))
}
