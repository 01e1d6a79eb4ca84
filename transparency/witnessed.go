package transparency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/witness"
)

// DefaultMaxAge is how old a cosignature may be when CheckOptions.MaxAge is 0.
const DefaultMaxAge = 24 * time.Hour

// checkWitnessed counts the cosignatures of signed by the required witnesses
// that verify and are no older than the maximum age.
func checkWitnessed(signed []byte, opts CheckOptions, now time.Time) error {
	quorum := max(opts.Quorum, 1)
	maxAge := opts.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	var verifiers []note.Verifier
	for _, vkey := range opts.Witnesses {
		v, err := witness.NewCosignatureVerifier(vkey)
		if err != nil {
			return fmt.Errorf("--witness: %w", err)
		}
		verifiers = append(verifiers, v)
	}
	count := 0
	var stale []string
	n, err := note.Open(signed, note.VerifierList(verifiers...))
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &unverified):
		// No required witness cosigned: count stays 0.
	case err != nil:
		return fmt.Errorf("%w: 0 of %d cosignatures (%v)", ErrNotWitnessed, quorum, err)
	default:
		seen := map[string]bool{}
		for _, s := range n.Sigs {
			t, err := witness.CosignatureTime(s)
			if err != nil || seen[s.Name] {
				continue
			}
			if now.Sub(t) > maxAge {
				stale = append(stale, fmt.Sprintf("%s cosigned at %s", s.Name, t.Format(time.RFC3339)))
				continue
			}
			seen[s.Name] = true
			count++
		}
	}
	if count < quorum {
		var why string
		if len(stale) > 0 {
			why = fmt.Sprintf(" (older than %s: %v)", maxAge, stale)
		}
		return fmt.Errorf("%w: %d of %d cosignatures%s", ErrNotWitnessed, count, quorum, why)
	}
	return nil
}

// witnessedCheckpoint fetches the node's witnessed checkpoint, or, while it
// has none (404 not_witnessed), its plain one, which then fails the quorum.
func (s nodeHost) witnessedCheckpoint(ctx context.Context) ([]byte, error) {
	if signed, err := s.c.get(ctx, "/v1/transparency/checkpoint?witnessed=1"); err == nil {
		return signed, nil
	}
	return s.c.get(ctx, "/v1/transparency/checkpoint")
}
