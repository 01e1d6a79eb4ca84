package transparency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
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

// witnessedPath is where the source serves the origin's witnessed
// checkpoint: a published directory's checkpoint file (Publish writes the
// witnessed note there when one covers the published tree), a node's
// checkpoint route with ?witnessed=1.
func (m *mirror) witnessedPath() string {
	if m.opts.API {
		return m.prefix + "/checkpoint?witnessed=1"
	}
	return m.prefix + "/" + CheckpointFile
}

// requireWitnessed requires the source's witnessed checkpoint to be the
// origin's, of the seal's tree head, and cosigned by a quorum of
// MirrorOptions.Witnesses, and returns it. A checkpoint not cosigned yet, or
// of another size than the seal's (a witness lags, a publish is half way),
// is ErrNotWitnessed without evidence: it proves nothing, and the follower
// asks again (Transient). A failure to fetch it is returned as it is. Only
// what the origin's key proves is evidence: a checkpoint of the seal's size
// with another root is a fork, one the origin's key did not sign is
// another_key or bad_seal.
func (m *mirror) requireWitnessed(ctx context.Context, head eventlog.TreeHead) ([]byte, error) {
	path := m.witnessedPath()
	signed, err := m.c.get(ctx, path)
	if Transient(err) {
		return nil, err // not an answer either way: the follower asks again
	}
	m.rep.Served = signed
	notYet := func(format string, args ...any) ([]byte, error) {
		m.rep.Result = "not_witnessed"
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrNotWitnessed}, args...)...)
	}
	if err != nil {
		return notYet("the source serves no witnessed checkpoint of the tree of %d events (%v)", head.Size, err)
	}
	wh, err := m.k.OpenCheckpoint(signed)
	switch {
	case errors.Is(err, ErrAnotherKey):
		m.rep.Result = "another_key"
		return nil, m.writeEvidence(fmt.Errorf("the source's checkpoint %s: %w", path, err), nil, path, 0, signed)
	case err != nil:
		m.rep.Result = "bad_seal"
		return nil, m.writeEvidence(fmt.Errorf("%w: the source's checkpoint %s: %w", ErrBadSeal, path, err), nil, path, 0, signed)
	case wh.Size == head.Size && wh.Root != head.Root:
		m.rep.Result = "forked"
		return nil, m.writeEvidence(fmt.Errorf("%w: the origin signed a tree of %d events with root %s in its seal and with root %s in its checkpoint",
			ErrForked, head.Size, B64(head.Root), B64(wh.Root)), nil, path, 0, signed)
	case wh != head:
		return notYet("the source's checkpoint is of a tree of %d events, its seal of %d", wh.Size, head.Size)
	}
	if err := checkWitnessed(signed, CheckOptions{Witnesses: m.opts.Witnesses, Quorum: m.opts.Quorum, MaxAge: m.opts.MaxAge}, time.Now()); err != nil {
		m.rep.Result = "not_witnessed"
		return nil, err
	}
	return signed, nil
}

// keepWitnessed sets Mirrored.Witnessed to the origin's witnessed checkpoint
// the source serves, when it carries cosignatures and is of a tree the
// mirror holds, so that the mirror serves it as the origin does. cosigned is
// the checkpoint requireWitnessed took, if it ran; else the source is asked,
// and a source that serves none, or fails to answer, leaves Witnessed nil
// (the caller keeps the one it had). Without MirrorOptions.Witnesses the
// mirror has no keys to check the cosignatures with: it carries the lines
// the source served, unchecked, and names their signers, as an observer
// checks them anyway (transparency check --witness). With them, only a
// checkpoint their quorum cosigned is kept, and only their names. The
// origin's signature is always checked; a checkpoint of a tree the mirror
// holds with another root is a fork, kept as evidence.
func (m *mirror) keepWitnessed(ctx context.Context, cosigned []byte) error {
	path := m.witnessedPath()
	signed := cosigned
	if signed == nil {
		var err error
		if signed, err = m.c.get(ctx, path); err != nil {
			return nil // the origin has none, or the source failed: nothing to keep this run
		}
	}
	names := cosignerNames(signed, m.k.Origin)
	if len(names) == 0 {
		return nil
	}
	wh, err := m.k.OpenCheckpoint(signed)
	if err != nil || wh.Size > m.l.TreeSize() || wh.Size == 0 {
		return nil // not the origin's, or of a tree the mirror does not hold yet
	}
	root, err := m.l.TreeRoot(wh.Size)
	if err != nil {
		return err
	}
	if root != wh.Root {
		m.rep.Result = "forked"
		return m.writeEvidence(fmt.Errorf("%w: the origin signed a tree of %d events with root %s, and the mirror holds one of that size with root %s",
			ErrForked, wh.Size, B64(wh.Root), B64(root)), nil, path, 0, signed)
	}
	if len(m.opts.Witnesses) > 0 {
		if cosigned == nil && checkWitnessed(signed, CheckOptions{Witnesses: m.opts.Witnesses, Quorum: m.opts.Quorum, MaxAge: m.opts.MaxAge}, time.Now()) != nil {
			return nil
		}
		names = requiredCosigners(signed, m.opts.Witnesses)
	}
	m.rep.Witnessed = &witness.Witnessed{TreeSize: wh.Size, Checkpoint: string(signed), Cosigners: names}
	return nil
}

// cosignerNames are the names of a note's signature lines other than the
// origin's, each once: its cosigners, unverified.
func cosignerNames(signed []byte, origin string) []string {
	_, sigs, ok := strings.Cut(string(signed), "\n\n")
	if !ok {
		return nil
	}
	var names []string
	seen := map[string]bool{origin: true}
	for _, line := range strings.Split(sigs, "\n") {
		rest, ok := strings.CutPrefix(line, "— ")
		if !ok {
			continue
		}
		name, _, ok := strings.Cut(rest, " ")
		if ok && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// requiredCosigners are the names of the witnesses among vkeys whose
// cosignature of signed verifies.
func requiredCosigners(signed []byte, vkeys []string) []string {
	var names []string
	for _, vkey := range vkeys {
		v, err := witness.NewCosignatureVerifier(vkey)
		if err != nil {
			continue
		}
		if n, err := note.Open(signed, note.VerifierList(v)); err == nil && len(n.Sigs) > 0 {
			names = append(names, v.Name())
		}
	}
	return names
}

// ReadHeldWitnessed reads the witnessed checkpoint a mirror keeps at path
// (WriteHeldWitnessed); nil when there is none. It is what the mirror
// checked when it kept it, and is served as it is.
func ReadHeldWitnessed(path string) (*witness.Witnessed, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var w witness.Witnessed
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &w, nil
}

// WriteHeldWitnessed keeps w at path, mode 0600, replaced atomically and
// durably, so that a mirror restarted serves the origin's cosignatures at
// once.
func WriteHeldWitnessed(path string, w *witness.Witnessed) error {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Replace(path, "", append(b, '\n'), 0o600); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// HeldFor is w as a mirror that requires the witnesses vkeys, quorum of
// them, may serve it: with only their names as cosigners, or nil when fewer
// than quorum of them cosigned it within maxAge. A mirror restarted with
// other witnesses or a larger quorum serves its kept checkpoint only if it
// passes them, as a changed quorum applies at once.
func HeldFor(w *witness.Witnessed, vkeys []string, quorum int, maxAge time.Duration) *witness.Witnessed {
	if w == nil || len(vkeys) == 0 {
		return w
	}
	if checkWitnessed([]byte(w.Checkpoint), CheckOptions{Witnesses: vkeys, Quorum: quorum, MaxAge: maxAge}, time.Now()) != nil {
		return nil
	}
	return &witness.Witnessed{TreeSize: w.TreeSize, Checkpoint: w.Checkpoint, Cosigners: requiredCosigners([]byte(w.Checkpoint), vkeys)}
}
