package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// Log is what a Submitter needs of the node's event log.
type Log interface {
	TreeSize() int64
	TreeCheckpoint() (eventlog.TreeHead, []byte, error)
	TreeCheckpointAt(size int64) (eventlog.TreeHead, []byte, error)
	ProveConsistency(from, to int64) (tlog.TreeProof, error)
}

// The back-off of a witness that fails: doubled from the interval, at most
// maxBackoff.
const maxBackoff = 5 * time.Minute

// requestTimeout bounds one add-checkpoint request.
const requestTimeout = 15 * time.Second

// maxPending bounds the checkpoints kept while they gather cosignatures.
const maxPending = 16

// SubmitterOptions configure a Submitter.
type SubmitterOptions struct {
	Log       Log
	Witnesses []Remote
	// Quorum is how many cosignatures make a checkpoint witnessed (1 or more,
	// at most len(Witnesses)).
	Quorum int
	// StatePath is the file the cosignatures are kept in.
	StatePath string
	// Interval is the least time between two submissions to one witness.
	Interval time.Duration
	// Client sends the requests; nil is a client of its own. Either way the
	// submitter follows redirects only on a witness's own scheme, host and
	// port (a copy of Client with its CheckRedirect replaced).
	Client *http.Client
	Logger *slog.Logger
	// OnWitnessed is called, outside any lock, each time the witnessed
	// checkpoint changes: a newer one, or the same one with a cosignature
	// more.
	OnWitnessed func(treeSize int64, note []byte)
	// Now is the node's clock, which a cosignature's time must be within
	// CosignatureWindow of; nil is time.Now.
	Now func() time.Time
	// Ceiling, if set, is the largest tree the submitter may submit: the
	// node submits the checkpoint of min(tree size, Ceiling()), so that
	// whatever a witness cosigns was published first (the bundles and tiles
	// a mirror needs to fetch it). 0: nothing yet.
	Ceiling func() int64
	// OnAhead, if set, is called when a witness answers that it holds a
	// tree of the node's key larger than the node's (a 409 naming its
	// size): the node is behind a checkpoint it signed, and its fork guard
	// must stop its appends.
	OnAhead func(witness string, size int64)
}

// Submitter submits the node's checkpoints to its witnesses and keeps their
// cosignatures.
type Submitter struct {
	opts SubmitterOptions

	mu        sync.Mutex
	witnesses []*remoteState
	witnessed *Witnessed
	pending   map[int64]*pendingCheckpoint
}

// Status is one witness's line in GET /v1/transparency.
type Status struct {
	Name         string
	VerifierKey  string
	URL          string
	CosignedSize int64
	CosignedAt   string // RFC 3339; "" before the first cosignature
	LastError    string // "" after a success
	// Submissions counts the answers by result: cosigned, conflict (409),
	// refused (another 4xx), error (anything else).
	Submissions map[string]uint64
}

type remoteState struct {
	remote Remote
	held   int64 // the size the witness holds, as far as the node knows
	status Status
}

type pendingCheckpoint struct {
	note  []byte
	lines map[string]string // by verifier key
}

// submitterState is the state file.
type submitterState struct {
	Witnessed *Witnessed                `json:"witnessed"`
	Witnesses map[string]storedCosigned `json:"witnesses"`
}

type storedCosigned struct {
	CosignedSize int64  `json:"cosigned_size"`
	CosignedAt   string `json:"cosigned_at"`
	Cosignature  string `json:"cosignature"`
}

// NewSubmitter reads the state file (none yet: nothing cosigned).
func NewSubmitter(opts SubmitterOptions) (*Submitter, error) {
	if opts.Quorum < 1 || opts.Quorum > len(opts.Witnesses) {
		return nil, fmt.Errorf("a quorum of %d witnesses out of %d", opts.Quorum, len(opts.Witnesses))
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: requestTimeout}
	}
	opts.Client = withRedirectRule(opts.Client)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Submitter{opts: opts, pending: map[int64]*pendingCheckpoint{}}
	var st submitterState
	if _, err := readJSONFile(opts.StatePath, &st); err != nil {
		return nil, err
	}
	s.witnessed = st.Witnessed
	size := opts.Log.TreeSize()
	if s.witnessed != nil && s.witnessed.TreeSize > size {
		// The tree is smaller than it was witnessed at (a data dir restored
		// from a backup): that checkpoint is not this tree's.
		s.witnessed = nil
	}
	seen := map[string]bool{}
	for _, r := range opts.Witnesses {
		if seen[r.Name()] {
			return nil, fmt.Errorf("two witnesses are named %s", r.Name())
		}
		seen[r.Name()] = true
		rs := &remoteState{remote: r, status: Status{Name: r.Name(), VerifierKey: r.VerifierKey, URL: r.displayURL(), Submissions: map[string]uint64{}}}
		if c, ok := st.Witnesses[r.VerifierKey]; ok {
			rs.held = c.CosignedSize
			rs.status.CosignedSize, rs.status.CosignedAt = c.CosignedSize, c.CosignedAt
			if c.CosignedSize <= size && (s.witnessed == nil || c.CosignedSize > s.witnessed.TreeSize) {
				if _, signed, err := opts.Log.TreeCheckpointAt(c.CosignedSize); err == nil {
					s.addPending(c.CosignedSize, signed, r.VerifierKey, c.Cosignature)
				}
			}
		}
		s.witnesses = append(s.witnesses, rs)
	}
	s.mergeStored(st.Witnesses)
	s.holdToQuorum()
	return s, nil
}

// holdToQuorum keeps the stored witnessed checkpoint only with a quorum of
// cosignatures by the witnesses configured now, each verified again: a quorum
// raised, or a witness dropped, applies at once, and what the checkpoint had
// waits among the pending ones for the cosignatures it lacks.
func (s *Submitter) holdToQuorum() {
	w := s.witnessed
	if w == nil {
		return
	}
	body, _, ok := strings.Cut(w.Checkpoint, "\n\n")
	if !ok {
		s.witnessed = nil
		return
	}
	// The note as the log signed it: the body and its first signature line.
	rest := w.Checkpoint[len(body)+2:]
	end := len(rest)
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		end = i + 1
	}
	signed := w.Checkpoint[:len(body)+2+end]
	kept := &Witnessed{TreeSize: w.TreeSize, Checkpoint: signed, Cosigners: []string{}}
	// In the order the checkpoint has them, which is the order they came.
	for _, l := range strings.SplitAfter(rest[end:], "\n") {
		for _, rs := range s.witnesses {
			line, _, err := findCosignature(rs.remote, []byte(signed), []byte(l))
			if err != nil || slices.Contains(kept.Cosigners, rs.remote.Name()) {
				continue
			}
			kept.Checkpoint += line
			kept.Cosigners = append(kept.Cosigners, rs.remote.Name())
			s.addPending(w.TreeSize, []byte(signed), rs.remote.VerifierKey, line)
		}
	}
	if len(kept.Cosigners) < s.opts.Quorum {
		s.witnessed = nil
		return
	}
	s.witnessed = kept
}

// mergeStored adds to the witnessed checkpoint the stored cosignatures of
// that checkpoint it lacks, each verified again, so that a state file kept
// when later cosignatures were dropped serves them all. Their time is not
// checked again: it was when they arrived, and they only age since.
func (s *Submitter) mergeStored(stored map[string]storedCosigned) {
	if s.witnessed == nil {
		return
	}
	for _, rs := range s.witnesses {
		c, ok := stored[rs.remote.VerifierKey]
		if !ok || c.CosignedSize != s.witnessed.TreeSize || c.Cosignature == "" {
			continue
		}
		line, _, err := findCosignature(rs.remote, []byte(s.witnessed.Checkpoint), []byte(c.Cosignature))
		if err != nil {
			continue
		}
		if w, changed := s.witnessed.with(rs.remote, line); changed {
			s.witnessed = w
		}
	}
}

// ReadWitnessed reads the witnessed checkpoint kept in a Submitter's state
// file, for a tool that runs while no node does (transparency publish); nil
// when there is none. It is what the node had witnessed when it stopped,
// unchecked: the caller opens it with the log's key.
func ReadWitnessed(statePath string) (*Witnessed, error) {
	var st submitterState
	if _, err := readJSONFile(statePath, &st); err != nil {
		return nil, err
	}
	return st.Witnessed, nil
}

// Quorum is the cosignatures a witnessed checkpoint needs.
func (s *Submitter) Quorum() int { return s.opts.Quorum }

// Witnessed is the newest witnessed checkpoint, nil while there is none.
func (s *Submitter) Witnessed() *Witnessed {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.witnessed == nil {
		return nil
	}
	w := *s.witnessed
	return &w
}

// Statuses are the witnesses' status lines, in the order given.
func (s *Submitter) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, len(s.witnesses))
	for i, rs := range s.witnesses {
		st := rs.status
		st.Submissions = make(map[string]uint64, len(rs.status.Submissions))
		for k, v := range rs.status.Submissions {
			st.Submissions[k] = v
		}
		out[i] = st
	}
	return out
}

// Run submits to every witness until ctx is done, one loop per witness, so a
// witness that is down or slow delays none of the others and no append.
func (s *Submitter) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, rs := range s.witnesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.runOne(ctx, rs)
		}()
	}
	wg.Wait()
}

func (s *Submitter) runOne(ctx context.Context, rs *remoteState) {
	log := s.opts.Logger.With(logkey.Witness, rs.remote.Name(), logkey.URL, rs.remote.displayURL())
	var backoff time.Duration
	failing := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		wait := s.opts.Interval
		if s.needsSubmit(rs) {
			size, err := s.submit(ctx, rs)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				backoff = min(max(2*backoff, s.opts.Interval), maxBackoff)
				wait = backoff
				failing = true
				log.Warn("witness submission failed", logkey.Err, err, logkey.RetryIn, backoff.String())
			default:
				if failing {
					log.Info("witness cosigns again", logkey.TreeSize, size)
				} else {
					log.Debug("witness cosigned", logkey.TreeSize, size)
				}
				backoff, failing = 0, false
			}
		}
		timer.Reset(wait)
	}
}

// needsSubmit: the tree has grown past what the witness cosigned, or it has
// cosigned nothing yet, or the last attempt failed.
func (s *Submitter) needsSubmit(rs *remoteState) bool {
	size := s.target()
	if size == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return rs.status.LastError != "" || rs.status.CosignedAt == "" || rs.status.CosignedSize != size
}

// target is the size of the tree to submit: the log's, below Ceiling.
func (s *Submitter) target() int64 {
	size := s.opts.Log.TreeSize()
	if s.opts.Ceiling != nil {
		size = min(size, s.opts.Ceiling())
	}
	return size
}

// checkpoint is the checkpoint to submit, of the target's tree.
func (s *Submitter) checkpoint() (eventlog.TreeHead, []byte, error) {
	if size := s.target(); size < s.opts.Log.TreeSize() {
		return s.opts.Log.TreeCheckpointAt(size)
	}
	return s.opts.Log.TreeCheckpoint()
}

// submit sends the newest checkpoint, resending once from the size a 409
// names, and records the cosignature.
func (s *Submitter) submit(ctx context.Context, rs *remoteState) (int64, error) {
	head, signed, err := s.checkpoint()
	if err != nil {
		return 0, s.fail(rs, "error", fmt.Errorf("sign the checkpoint: %w", err))
	}
	s.mu.Lock()
	old := rs.held
	s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if old > head.Size {
			return 0, s.fail(rs, "conflict", fmt.Errorf("the witness holds a tree of %d events, larger than this node's %d", old, head.Size))
		}
		line, held, err := s.post(ctx, rs.remote, old, head, signed)
		if err == nil {
			return head.Size, s.record(rs, head.Size, signed, line)
		}
		var conflict *conflictError
		if errors.As(err, &conflict) && held > head.Size {
			// Not kept as the size the witness holds: the next attempt,
			// after the back-off, asks the witness again.
			if s.opts.OnAhead != nil && held > s.opts.Log.TreeSize() {
				s.opts.OnAhead(rs.remote.Name(), held)
			}
			return 0, s.fail(rs, "conflict", fmt.Errorf("%w: 409: the witness holds a tree of %d events, larger than this node's %d", ErrHeldSize, held, head.Size))
		}
		if errors.As(err, &conflict) && attempt == 0 {
			s.count(rs, "conflict")
			old = held
			s.mu.Lock()
			rs.held = held
			s.mu.Unlock()
			continue
		}
		result := "error"
		var refused *refusedError
		switch {
		case errors.As(err, &conflict):
			result = "conflict"
		case errors.As(err, &refused):
			result = "refused"
		}
		return 0, s.fail(rs, result, err)
	}
}

type conflictError struct{ size int64 }

func (e *conflictError) Error() string {
	return fmt.Sprintf("409: the witness holds a tree of %d events", e.size)
}

type refusedError struct {
	status int
	msg    string
}

func (e *refusedError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.msg) }

// post sends one add-checkpoint request; it returns the verified cosignature
// line, or a *conflictError with the size the witness holds.
func (s *Submitter) post(ctx context.Context, r Remote, old int64, head eventlog.TreeHead, signed []byte) (string, int64, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", old)
	if old > 0 && old < head.Size {
		proof, err := s.opts.Log.ProveConsistency(old, head.Size)
		if err != nil {
			return "", 0, fmt.Errorf("prove consistency from %d to %d: %w", old, head.Size, err)
		}
		for _, h := range proof {
			body.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
		}
	}
	body.WriteString("\n")
	body.Write(signed)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/add-checkpoint", &body)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", 0, fmt.Errorf("read the answer: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		line, sig, err := findCosignature(r, signed, b)
		if err != nil {
			return "", 0, err
		}
		if err := checkCosignatureTime(sig, s.opts.Now()); err != nil {
			return "", 0, err
		}
		return line, 0, nil
	case resp.StatusCode == http.StatusConflict && isSizeBody(resp.Header.Get("Content-Type")):
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return "", 0, fmt.Errorf("409 with a size that is not a number: %q", snippet(b))
		}
		if err := eventlog.CheckTreeSize(n); err != nil {
			return "", 0, fmt.Errorf("%w: 409: %w", ErrHeldSize, err)
		}
		return "", n, &conflictError{size: n}
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return "", 0, &refusedError{status: resp.StatusCode, msg: snippet(b)}
	default:
		return "", 0, fmt.Errorf("%d: %s", resp.StatusCode, snippet(b))
	}
}

func isSizeBody(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/x.tlog.size"
}

// findCosignature picks the witness's cosignature/v1 line from an answer and
// verifies it over the checkpoint body; it returns the line and its
// signature after the key hash (the timestamp and the Ed25519 signature).
func findCosignature(r Remote, signed, answer []byte) (string, []byte, error) {
	i := bytes.Index(signed, []byte("\n\n"))
	if i < 0 {
		return "", nil, errors.New("the node's own checkpoint is not a note")
	}
	text := signed[:i+1]
	for _, line := range strings.SplitAfter(string(answer), "\n") {
		name, sig, ok := parseSignatureLine(line)
		if !ok || name != r.Name() || len(sig) < 4 || binary.BigEndian.Uint32(sig) != r.verifier.KeyHash() {
			continue
		}
		if !r.verifier.Verify(text, sig[4:]) {
			return "", nil, errors.New("the witness answered a cosignature that does not verify with its key")
		}
		return strings.TrimSuffix(line, "\n") + "\n", sig[4:], nil
	}
	return "", nil, fmt.Errorf("the answer has no cosignature by %s: %q", r.Name(), snippet(answer))
}

// parseSignatureLine reads "— <name> <base64>" (one signed-note signature line).
func parseSignatureLine(line string) (string, []byte, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "— ")
	if !ok {
		return "", nil, false
	}
	name, b64sig, ok := strings.Cut(rest, " ")
	if !ok {
		return "", nil, false
	}
	sig, err := base64.StdEncoding.DecodeString(b64sig)
	if err != nil {
		return "", nil, false
	}
	return name, sig, true
}

func snippet(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (s *Submitter) count(rs *remoteState, result string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs.status.Submissions[result]++
}

// fail records err on the witness's status.
func (s *Submitter) fail(rs *remoteState, result string, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs.status.Submissions[result]++
	rs.status.LastError = err.Error()
	return err
}

// record keeps a cosignature, recomputes the witnessed checkpoint, and
// replaces the state file.
func (s *Submitter) record(rs *remoteState, size int64, signed []byte, line string) error {
	s.mu.Lock()
	rs.held = size
	rs.status.Submissions["cosigned"]++
	rs.status.LastError = ""
	rs.status.CosignedSize = size
	rs.status.CosignedAt = s.opts.Now().UTC().Format(time.RFC3339)
	s.addPending(size, signed, rs.remote.VerifierKey, line)
	var changed *Witnessed
	p := s.pending[size]
	switch {
	case s.witnessed != nil && size == s.witnessed.TreeSize && s.witnessed.sameTree(signed):
		// A cosignature of the witnessed checkpoint after its quorum: an
		// observer may trust this witness alone, so the served note carries
		// every cosignature gathered for it.
		if w, ok := s.witnessed.with(rs.remote, line); ok {
			s.witnessed, changed = w, w
		}
	case len(p.lines) >= s.opts.Quorum && (s.witnessed == nil || size >= s.witnessed.TreeSize):
		w := &Witnessed{TreeSize: size, Checkpoint: string(p.note), Cosigners: []string{}}
		for _, other := range s.witnesses {
			if l, ok := p.lines[other.remote.VerifierKey]; ok {
				w.Checkpoint += l
				w.Cosigners = append(w.Cosigners, other.remote.Name())
			}
		}
		s.witnessed, changed = w, w
		for n := range s.pending {
			if n < size {
				delete(s.pending, n)
			}
		}
	}
	st := submitterState{Witnessed: s.witnessed, Witnesses: map[string]storedCosigned{}}
	for _, other := range s.witnesses {
		if other.status.CosignedAt == "" {
			continue
		}
		c := storedCosigned{CosignedSize: other.status.CosignedSize, CosignedAt: other.status.CosignedAt}
		if p := s.pending[c.CosignedSize]; p != nil {
			c.Cosignature = p.lines[other.remote.VerifierKey]
		}
		st.Witnesses[other.remote.VerifierKey] = c
	}
	err := writeJSONFile(s.opts.StatePath, st)
	s.mu.Unlock()
	if err != nil {
		return s.fail(rs, "error", fmt.Errorf("keep the cosignature: %w", err))
	}
	if changed != nil && s.opts.OnWitnessed != nil {
		s.opts.OnWitnessed(changed.TreeSize, []byte(changed.Checkpoint))
	}
	return nil
}

// addPending notes a cosignature of the checkpoint of size; s.mu is held.
func (s *Submitter) addPending(size int64, signed []byte, vkey, line string) {
	if line == "" {
		return
	}
	p := s.pending[size]
	if p == nil {
		if len(s.pending) >= maxPending {
			smallest := int64(-1)
			for n := range s.pending {
				if smallest < 0 || n < smallest {
					smallest = n
				}
			}
			delete(s.pending, smallest)
		}
		p = &pendingCheckpoint{note: signed, lines: map[string]string{}}
		s.pending[size] = p
	}
	p.lines[vkey] = line
}
