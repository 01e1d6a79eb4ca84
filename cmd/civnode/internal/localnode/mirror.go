package localnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

// MirrorSource is where a mirror's chain comes from and the key it must be
// signed with: civnode mirror's and serve --mirror-of's flags.
type MirrorSource struct {
	// From is the base URL of a published directory, or with Token of a
	// node's API.
	From, Token string
	// VerifierKey, if set, is the origin's note verifier key; else the one
	// the source serves is pinned on the first run.
	VerifierKey string
	// Interval is how often a follower looks for a new seal.
	Interval time.Duration
	// Witnesses, Quorum and MaxAge, when Witnesses are given, require the
	// source's tree to be witnessed (transparency.MirrorOptions).
	Witnesses []string
	Quorum    int
	MaxAge    time.Duration
	// CAFile is a PEM bundle trusted besides the system's roots for an
	// https:// source (ClientTLS).
	CAFile string
}

// OpenMirrorSource makes the client of the source and pins the origin's key
// in dir on the first run; a later run requires the same key. A follower
// (not once) that must read the key from the source waits out a source that
// is down (retry), as FollowMirror does.
func OpenMirrorSource(ctx context.Context, logger *slog.Logger, dir datadir.Dir, src MirrorSource, once bool) (*transparency.Client, transparency.Key, error) {
	pinned, err := dir.OriginKey()
	if err != nil {
		return nil, transparency.Key{}, err
	}
	if pinned != "" && src.VerifierKey != "" && pinned != src.VerifierKey {
		return nil, transparency.Key{}, fmt.Errorf("%s holds the origin key %s, not --verifier-key %s; a mirror follows one origin",
			dir.OriginKeyPath(), pinned, src.VerifierKey)
	}
	tlsConfig, err := ClientTLS(src.CAFile)
	if err != nil {
		return nil, transparency.Key{}, err
	}
	c, err := transparency.NewObserverClient(src.From, src.Token, transparency.WithTLSConfig(tlsConfig))
	if err != nil {
		return nil, transparency.Key{}, err
	}
	vkey := pinned
	if vkey == "" {
		vkey = src.VerifierKey
	}
	var k transparency.Key
	r := retry{logger: logger, via: c.Via(), interval: src.Interval}
	for {
		k, err = transparency.MirrorKey(ctx, c, src.Token != "", vkey)
		if err == nil || once || !transparency.Transient(err) {
			break
		}
		if err = r.wait(ctx, err); err != nil {
			break
		}
	}
	if err != nil {
		c.Close()
		return nil, transparency.Key{}, err
	}
	if pinned == "" {
		if err := dir.PinOriginKey(k.VerifierKey); err != nil {
			c.Close()
			return nil, transparency.Key{}, err
		}
	}
	return c, k, nil
}

// FollowMirror runs transparency.Mirror once, or every src.Interval until
// ctx is done or a run fails, reporting each run that stored events (and,
// with once, the run whatever it did): civnode mirror. A follower waits out
// a failure that may pass (transparency.Transient: a connection refused or
// reset, a timeout, a 5xx or 429, a tree not cosigned by the witnesses
// required yet), logging each at warn, and goes on; any other failure,
// evidence above all, ends it, as any failure ends a run with once.
func FollowMirror(ctx context.Context, logger *slog.Logger, c *transparency.Client, l *eventlog.Log, dir datadir.Dir, src MirrorSource, once bool, report func(transparency.Mirrored)) error {
	return NewFollower(logger, c, l, dir, src).Follow(ctx, once, false, report)
}

// Follower follows a mirror's source into its log, and says how that goes
// (civhttp.Mirror): the state, how far behind the source the mirror is, the
// last failure, the evidence it stopped on; and the origin's newest
// witnessed checkpoint of a tree the mirror holds, kept in the data dir
// (HeldWitnessedPath) so that a mirror restarted serves it at once.
type Follower struct {
	logger *slog.Logger
	c      *transparency.Client
	l      *eventlog.Log
	dir    datadir.Dir
	src    MirrorSource

	mu         sync.Mutex
	state      string
	sourceSize int64
	failed     int
	lastErr    string
	evidence   string
	witnessed  *witness.Witnessed
}

// HeldWitnessedName is the file of a mirror's data dir that keeps the
// origin's newest witnessed checkpoint the mirror holds the tree of.
const HeldWitnessedName = "mirror-witnessed.json"

// HeldWitnessedPath is the file in dir that keeps the origin's witnessed
// checkpoint a mirror serves.
func HeldWitnessedPath(dir datadir.Dir) string { return filepath.Join(string(dir), HeldWitnessedName) }

// witnessRetryCap caps the back-off while the source's tree waits for its
// cosignatures: a witness cosigns within seconds of the origin's
// submission (at most once a second), so the wait is short unless the
// follower's interval is longer.
const witnessRetryCap = 10 * time.Second

// NewFollower is the follower of c into l, with the witnessed checkpoint
// the data dir keeps (a file that cannot be read is logged and left to the
// next one the source serves).
func NewFollower(logger *slog.Logger, c *transparency.Client, l *eventlog.Log, dir datadir.Dir, src MirrorSource) *Follower {
	f := &Follower{logger: logger, c: c, l: l, dir: dir, src: src, state: civhttp.MirrorFollowing}
	w, err := transparency.ReadHeldWitnessed(HeldWitnessedPath(dir))
	if err != nil {
		logger.Warn("the mirror's witnessed checkpoint", logkey.Path, HeldWitnessedPath(dir), logkey.Err, err)
	}
	if w != nil && w.TreeSize <= l.TreeSize() {
		f.witnessed = transparency.HeldFor(w, src.Witnesses, src.Quorum, src.MaxAge)
	}
	return f
}

// MirrorStatus is how the following goes now.
func (f *Follower) MirrorStatus() civhttp.MirrorStatus {
	held := f.l.TreeSize()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := civhttp.MirrorStatus{Source: f.c.Base(), State: f.state, SourceTreeSize: f.sourceSize, TreeSize: held,
		Behind: max(0, f.sourceSize-held), FailedAttempts: f.failed}
	if f.lastErr != "" {
		st.LastError = &f.lastErr
	}
	if f.evidence != "" {
		st.Evidence = &f.evidence
	}
	return st
}

// Witnessed is the origin's newest witnessed checkpoint the mirror holds,
// nil while there is none.
func (f *Follower) Witnessed() *witness.Witnessed {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.witnessed == nil {
		return nil
	}
	w := *f.witnessed
	return &w
}

// Follow runs transparency.Mirror once, or every src.Interval until ctx is
// done, reporting each run that stored events (with once, the run whatever
// it did). A failure that may pass (transparency.Transient) is waited out
// with back-off, the mirror serving what it holds meanwhile; with
// retryAll (serve --mirror-of), so is any failure but evidence (a 404 while
// a directory is set up, a refused token an operator renews). Evidence
// (transparency.Evidence) ends the following in the state stopped; any
// failure ends a run with once.
func (f *Follower) Follow(ctx context.Context, once, retryAll bool, report func(transparency.Mirrored)) error {
	opts := transparency.MirrorOptions{URL: f.c.Base(), API: f.src.Token != "", Evidence: f.dir.EvidencePrefix(),
		Witnesses: f.src.Witnesses, Quorum: f.src.Quorum, MaxAge: f.src.MaxAge}
	r := retry{logger: f.logger, via: f.c.Via(), interval: f.src.Interval}
	var served []byte
	for {
		rep, err := transparency.Mirror(ctx, f.c, f.l, opts)
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil
		}
		f.observe(rep, err)
		if err != nil && !once && (transparency.Transient(err) || retryAll && !isEvidence(err)) {
			if !bytes.Equal(rep.Served, served) {
				r.attempt = 0 // the source serves another checkpoint: a new wait
			}
			served = rep.Served
			wait := r.wait
			if errors.Is(err, transparency.ErrNotWitnessed) {
				wait = r.waitCapped(witnessRetryCap)
			}
			if wait(ctx, err) != nil {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("mirror %s: %w", f.c.Via(), err)
		}
		if err := f.checkState(ctx); err != nil {
			return fmt.Errorf("mirror %s: %w", f.c.Via(), err)
		}
		served = nil
		if r.attempt > 0 {
			f.logger.Info("the source answers again", logkey.From, f.c.Via(), logkey.FailedAttempts, r.attempt)
			r.attempt = 0
		}
		if once || rep.Events > 0 {
			report(rep)
		}
		if once {
			return nil
		}
		t := time.NewTimer(max(f.src.Interval, minInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// isEvidence reports whether err proves the origin wrong, so that the
// mirror stops following for good and serves what it verified: what
// transparency.Evidence names, and a state root the events do not give.
func isEvidence(err error) bool {
	var mm *projections.StateMismatch
	return transparency.Evidence(err) || errors.As(err, &mm)
}

// checkState derives the root of each state.committed the run brought
// from the events and checks it against the signed one
// (projections.CheckStateCommitments). A root the events do not give is
// evidence: the mirror stops following and says why, as for a fork.
//
// civnode mirror keeps the chain alone, without read models: its
// commitments are checked by civnode verify --data-dir, which derives them.
func (f *Follower) checkState(ctx context.Context) error {
	if !f.l.HasModels() {
		return nil
	}
	_, err := projections.CheckStateCommitments(ctx, f.l)
	var mm *projections.StateMismatch
	if errors.As(err, &mm) {
		f.mu.Lock()
		f.state, f.lastErr, f.evidence = civhttp.MirrorStopped, mm.Error(), mm.Error()
		f.failed++
		f.mu.Unlock()
		f.logger.Error("the origin signed a state its events do not give; the mirror stops following", logkey.Seq, mm.Seq,
			logkey.StateRoot, mm.Signed, logkey.StateRootDerived, mm.Derived)
	}
	return err
}

// observe takes what one run did into the status, and keeps a newer
// witnessed checkpoint it brought.
func (f *Follower) observe(rep transparency.Mirrored, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rep.Head.Size > 0 {
		f.sourceSize = rep.Head.Size
	}
	switch {
	case err == nil:
		f.state, f.failed, f.lastErr = civhttp.MirrorFollowing, 0, ""
	case isEvidence(err):
		f.state, f.lastErr, f.evidence = civhttp.MirrorStopped, err.Error(), rep.Evidence
		f.failed++
	default:
		f.state, f.lastErr = civhttp.MirrorRetrying, err.Error()
		f.failed++
	}
	w := rep.Witnessed
	if w == nil || f.witnessed != nil && (w.TreeSize < f.witnessed.TreeSize || w.Checkpoint == f.witnessed.Checkpoint) {
		return
	}
	if werr := transparency.WriteHeldWitnessed(HeldWitnessedPath(f.dir), w); werr != nil {
		// Served all the same; the file is written again with the next one.
		f.logger.Warn("keep the origin's witnessed checkpoint", logkey.Path, HeldWitnessedPath(f.dir), logkey.Err, werr)
	}
	f.witnessed = w
}

// retry paces a follower's attempts after failures of its source that may
// pass: one warn line for each, with how many failed in a row and when the
// next attempt is.
type retry struct {
	logger   *slog.Logger
	via      string
	interval time.Duration
	attempt  int // failures in a row
}

// wait logs err and waits for the next attempt (transparency.RetryDelay);
// it returns ctx's error if ctx is done first.
func (r *retry) wait(ctx context.Context, err error) error { return r.waitAtMost(ctx, err, 0) }

// waitCapped is wait with the delay at most limit, or the interval when
// that is longer.
func (r *retry) waitCapped(limit time.Duration) func(context.Context, error) error {
	return func(ctx context.Context, err error) error { return r.waitAtMost(ctx, err, max(limit, r.interval)) }
}

func (r *retry) waitAtMost(ctx context.Context, err error, limit time.Duration) error {
	r.attempt++
	d := transparency.RetryDelay(max(r.interval, minInterval), r.attempt)
	if limit > 0 {
		d = min(d, limit)
	}
	r.logger.Warn("the source failed; retrying", logkey.From, r.via, logkey.Attempt, r.attempt, logkey.RetryIn, d.Round(time.Millisecond), logkey.Err, err)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// minInterval is the shortest interval a follower polls at.
const minInterval = 100 * time.Millisecond

// openMirror opens a mirror (civnode serve --mirror-of): it follows the
// origin at cfg.Mirror into cfg.Dir as civnode mirror does, and the node
// serves the chain read-only from the same process. The read models are
// folded from the verified chain as it is stored, and the stream publishes
// each stored group on the origin's subjects. The mirror's own owner token
// (control.token) and observer tokens authenticate readers as on a node;
// every write answers 403 read_only_mirror. Any failure of the source but
// evidence (a connection refused, a 503, a tree not cosigned yet) is waited
// out while the node serves what it holds; evidence (a fork, a rollback, an
// event that does not verify) stops the following, after it is kept, and
// the node goes on serving the verified chain, saying so (Follower).
func (n *Node) openMirror(ctx context.Context) error {
	cfg, logger, dir, src := n.cfg, n.logger, n.cfg.Dir, *n.cfg.Mirror
	c, k, err := OpenMirrorSource(ctx, logger, dir, src, false)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopped while the source was down
		}
		return err
	}
	n.source, n.origin = c, k
	if n.token, err = datadir.LoadOrCreateControlToken(dir.TokenPath(), logger); err != nil {
		return err
	}
	nats := cfg.NATS
	nats.NodeDID, nats.Logger = k.DID, logger
	portTokens := newNATSTokens(n.token)
	nats.Authenticate = portTokens.check
	if n.stream, err = stream.Start(nats); err != nil {
		return err
	}
	if nats.TLSCertFile != "" {
		n.goBackground(func(ctx context.Context) { reloadNATSCertOnHUP(ctx, n.stream) })
	}
	n.metrics = civhttp.NewMetrics()
	node, err := core.Open(eventlog.Options{
		Dir: dir.DBPath(), PublicKey: k.PublicKey(), Logger: logger,
		OnRebuild: rebuildLogger(logger), OnCommit: n.stream.Publish, OnGroupCommit: n.metrics.ObserveGroupCommit,
		ModelCacheSize: cfg.ModelCache,
	}, core.Config{Catalog: cfg.Catalog, Governs: cfg.HTTP.Governs})
	if err != nil {
		return dir.OpenError(err)
	}
	n.core = node
	portTokens.service.Store(node.Tokens)
	n.goBackground(func(ctx context.Context) { n.stream.PublishCheckpoints(ctx, node.Log, stream.CheckpointInterval) })
	f := NewFollower(logger, c, node.Log, dir, src)
	n.http.Mirror = f
	n.followed = make(chan error, 1)
	go func() {
		err := f.Follow(n.bg, false, true, func(rep transparency.Mirrored) {
			logger.Info("mirrored", logkey.Origin, k.Origin, logkey.TreeSize, rep.Head.Size, logkey.Events, rep.Events)
		})
		switch {
		case err != nil && isEvidence(err):
			// Said once, here; /v1/transparency, /v1/ready and the metrics
			// go on saying it while the mirror serves what it verified.
			logger.Error("stopped following the origin on evidence; serving the verified chain read-only",
				logkey.Origin, k.Origin, logkey.TreeSize, node.Log.TreeSize(), logkey.Err, err)
			err = nil
		case err != nil:
			logger.Error("stopped following the origin", logkey.Err, err)
			n.stopBg()
		}
		n.followed <- err
	}()
	return nil
}
