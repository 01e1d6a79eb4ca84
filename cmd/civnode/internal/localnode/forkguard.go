package localnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

// The reasons a fork guard holds the log's writes (eventlog.Behind.Reason).
const (
	heldBehind     = "behind"
	heldForked     = "forked"
	heldWaiting    = "waiting"
	heldSuperseded = "superseded"
)

// DefaultWitnessStartWait is how long a node that was not recovered waits at
// start for its witnesses to say it is not behind before it appends anyway.
const DefaultWitnessStartWait = 10 * time.Second

// askTimeout bounds one question to a witness.
const askTimeout = 5 * time.Second

// forkGuard keeps a node from signing a second event at a seq that left it
// in signed form (docs/operations.md, The fork guard). Before the node's
// first append, and whenever it hears of a newer checkpoint of its own key,
// it compares the chain's tip with every checkpoint of that key it can know
// of: the stored witnessed checkpoint, each published source's, and the
// tree each witness holds. While one of them is larger than the chain, or
// of the same size with another root, the log holds its writes
// (eventlog.Log.Hold); a larger tree whose tail a published source serves is
// caught up, verified event by event as a mirror does (transparency.Mirror).
type forkGuard struct {
	chain     *eventlog.Log
	dir       datadir.Dir
	logger    *slog.Logger
	published []string // directories and URLs Publish wrote to
	witnesses []witness.Remote
	quorum    int
	// recovered is how the data dir was made (datadir.RecoveredBy*), "" for
	// none: a recovered one with witnesses waits for a quorum of them,
	// however long.
	recovered string
	startWait time.Duration
	instance  string
	client    *http.Client
	// writable is called once, when the guard first lets the log append
	// (recordPromoted). An error holds the log again and keeps the recovered
	// mark: the node appends nothing until writable has run.
	writable func(ctx context.Context) error

	mu   sync.Mutex
	note string
	// told is the largest tree Saw was told of: a source that said so
	// and then cannot be reached has not taken it back.
	told    sighting
	recheck chan struct{}
	opened  bool // writable was called
}

// newForkGuard holds chain's writes until its first check passes.
func newForkGuard(g *forkGuard) *forkGuard {
	g.recheck = make(chan struct{}, 1)
	if g.client == nil {
		g.client = &http.Client{Timeout: 15 * time.Second}
	}
	if g.startWait <= 0 {
		g.startWait = DefaultWitnessStartWait
	}
	g.chain.Hold(eventlog.Behind{Reason: heldWaiting, Tip: g.chain.TreeSize(), Seen: "the fork guard's first check, not done yet"})
	return g
}

// Note is what the guard last learnt besides its hold, for /v1/transparency.
func (g *forkGuard) Note() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.note
}

func (g *forkGuard) setNote(format string, args ...any) {
	g.mu.Lock()
	g.note = fmt.Sprintf(format, args...)
	g.mu.Unlock()
}

// Saw is told of a checkpoint of the node's key of size events seen at
// where (a witness's 409, a publish target that holds more): the log holds
// its writes at once if the chain lacks some of them, and the guard checks
// again, catching up from the published sources if one holds the tail.
func (g *forkGuard) Saw(where string, size int64) {
	tip := g.chain.TreeSize()
	if size <= tip {
		return
	}
	g.mu.Lock()
	if size > g.told.Size {
		g.told = sighting{Size: size, Where: where}
	}
	g.mu.Unlock()
	g.hold(eventlog.Behind{Reason: heldBehind, Size: size, Tip: tip, Seen: where})
	select {
	case g.recheck <- struct{}{}:
	default:
	}
}

// PublishRefused is told that the node's publish target refused its tree
// (a larger tree, another history, another key there): what the target
// holds is a checkpoint the chain does not extend, or not of its key, so
// the node appends nothing until an operator has looked (the target is
// named, the reason in the note).
func (g *forkGuard) PublishRefused(err error) {
	g.hold(eventlog.Behind{Reason: heldForked, Tip: g.chain.TreeSize(), Fork: true, Seen: "the publish target"})
	g.setNote("%v", err)
}

// WitnessAhead is witness.SubmitterOptions.OnAhead: a witness holds a larger
// tree of the node's key.
func (g *forkGuard) WitnessAhead(name string, size int64) { g.Saw("witness "+name, size) }

func (g *forkGuard) hold(b eventlog.Behind) {
	if old := g.chain.Held(); old == nil || *old != b {
		g.logger.Error("the fork guard holds the node's writes", logkey.Why, b.Reason, logkey.Err, b.Message())
	}
	g.chain.Hold(b)
}

// run goes on after the first check, which found the guard settled or not:
// until it is, it checks again (each wait at most the rest of startWait, so
// a node that was not recovered appends once it is over); then it waits for
// news of a newer checkpoint (Ahead) and checks again, until ctx is done.
func (g *forkGuard) run(ctx context.Context, start time.Time, settled bool) {
	delay := time.Second
	for {
		wait := time.Hour
		if !settled {
			wait = delay
			if rest := g.startWait - time.Since(start); g.recovered == "" && rest > 0 {
				wait = min(wait, rest+10*time.Millisecond)
			}
			delay = min(2*delay, 30*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-g.recheck:
			delay = time.Second
		case <-t.C:
		}
		t.Stop()
		settled = g.checkOnce(ctx, time.Since(start))
	}
}

// checkOnce compares the chain with what each source holds, catches up
// from a published source where one holds the missing tail, and holds or
// releases the log. It reports whether the guard is settled: released, or
// held for good (a fork, a superseded node).
func (g *forkGuard) checkOnce(ctx context.Context, waited time.Duration) (settled bool) {
	if b := g.chain.Held(); b != nil && (b.Reason == heldForked || b.Reason == heldSuperseded) {
		return true
	}
	tip := g.chain.TreeSize()
	// The stored witnessed checkpoint, and each published source.
	seen, err := g.seenLocally(ctx, tip)
	if err != nil {
		return g.forked(err)
	}
	g.mu.Lock()
	if g.told.Size > seen.Size {
		seen = g.told
	}
	g.mu.Unlock()
	unreached := []string{}
	sourcesUnread := 0
	for _, loc := range g.published {
		rep, err := CatchUp(ctx, g.chain, g.dir, loc)
		if rep.Events > 0 {
			g.logger.Info("caught up from the published tail", logkey.From, loc, logkey.Events, rep.Events, logkey.TreeSize, g.chain.TreeSize())
		}
		switch {
		case rep.SupersededBy != "":
			size := g.chain.TreeSize()
			g.hold(eventlog.Behind{Reason: heldSuperseded, Size: size, Tip: size, Seen: "node.promoted of instance " + rep.SupersededBy + " at " + loc})
			g.setNote("another instance (%s) was promoted in this node's place: it appends nothing", rep.SupersededBy)
			return true
		case err != nil && transparency.Evidence(err):
			g.hold(eventlog.Behind{Reason: heldForked, Size: rep.Published.Size, Tip: g.chain.TreeSize(), Fork: true, Seen: loc})
			g.setNote("%s: %v", loc, err)
			return true
		case err != nil:
			if ctx.Err() != nil {
				return false
			}
			unreached = append(unreached, loc)
			sourcesUnread++
			g.logger.Warn("the fork guard cannot read a published source", logkey.From, loc, logkey.Err, err)
			continue
		}
		if rep.Published.Size > seen.Size {
			seen = sighting{Size: rep.Published.Size, Where: loc}
		}
	}
	tip = g.chain.TreeSize()
	// What each witness holds.
	answered := 0
	for _, r := range g.witnesses {
		held, err := g.askWitness(ctx, r)
		if errors.Is(err, witness.ErrHeldAnotherTree) {
			g.hold(eventlog.Behind{Reason: heldForked, Size: held, Tip: tip, Fork: true, Seen: "witness " + r.Name()})
			g.setNote("witness %s: %v", r.Name(), err)
			return true
		}
		if err != nil {
			unreached = append(unreached, "witness "+r.Name())
			g.logger.Warn("the fork guard cannot learn what a witness holds", logkey.Witness, r.Name(), logkey.Err, err)
			continue
		}
		answered++
		if held > seen.Size {
			seen = sighting{Size: held, Where: "witness " + r.Name()}
		}
	}
	if seen.Size > tip && g.catchUpTail(ctx, seen) {
		// The tail a witness cosigned was fetched: the witnesses are asked
		// again with the chain's new checkpoint, which they cosign only if
		// it is the very tree they hold.
		return g.checkOnce(ctx, waited)
	}
	if b := g.chain.Held(); b != nil && b.Reason == heldSuperseded {
		return true
	}
	if seen.Size > tip {
		// No published source holds the tail: the node waits for one
		// that does (it checks again), read-only.
		g.hold(eventlog.Behind{Reason: heldBehind, Size: seen.Size, Tip: tip, Seen: seen.Where})
		return false
	}
	quorum := len(g.witnesses) == 0 || answered >= g.quorum
	switch {
	case quorum && len(unreached) == 0:
		g.setNote("")
	case g.recovered != "" && !quorum:
		g.hold(eventlog.Behind{Reason: heldWaiting, Tip: tip,
			Seen: fmt.Sprintf("a data dir made by %s waits for a quorum of its witnesses (%d of %d answered; unreached: %v)", g.recovered, answered, g.quorum, unreached)})
		return false
	case g.recovered != "" && sourcesUnread > 0:
		// A recovered chain told where it is published waits to read it:
		// what it lacks is there.
		g.hold(eventlog.Behind{Reason: heldWaiting, Tip: tip,
			Seen: fmt.Sprintf("a data dir made by %s waits to read where it is published (unreached: %v)", g.recovered, unreached)})
		return false
	case waited < g.startWait:
		return false
	default:
		g.setNote("the node appends without word from %v, after waiting %s", unreached, g.startWait)
		g.logger.Warn("the fork guard let the node append without word from every source", logkey.Unreached, unreached, logkey.Wait, g.startWait.String())
	}
	g.release(ctx)
	return len(unreached) == 0
}

// catchUpTail fetches the events up to seen.Size from the bundles of the
// first published source that holds them beyond its seal
// (transparency.IngestTail): the tail of a tree a witness cosigned before
// the publisher wrote its checkpoint. It reports whether the chain grew.
func (g *forkGuard) catchUpTail(ctx context.Context, seen sighting) bool {
	from := g.chain.TreeSize()
	for _, loc := range g.published {
		c, err := transparency.PublishedClient(loc)
		if err != nil {
			continue
		}
		n, err := transparency.IngestTail(ctx, c, g.chain, seen.Size)
		c.Close()
		if n > 0 {
			g.logger.Info("caught up from published bundles beyond the seal", logkey.From, loc, logkey.Events, n, logkey.TreeSize, g.chain.TreeSize())
		}
		if err != nil {
			g.logger.Warn("the tail a witness holds is not all published yet", logkey.From, loc, logkey.Err, err)
		}
		if g.chain.TreeSize() >= seen.Size {
			break
		}
	}
	if g.chain.TreeSize() == from {
		return false
	}
	if other, err := supersededSince(g.chain, g.dir, from); err == nil && other != "" {
		size := g.chain.TreeSize()
		g.hold(eventlog.Behind{Reason: heldSuperseded, Size: size, Tip: size, Seen: "node.promoted of instance " + other})
		g.setNote("another instance (%s) was promoted in this node's place: it appends nothing", other)
		return false
	}
	return true
}

// sighting is the largest checkpoint of the node's key seen, and where.
type sighting struct {
	Size  int64
	Where string
}

// seenLocally is the stored witnessed checkpoint, compared with the chain.
func (g *forkGuard) seenLocally(ctx context.Context, tip int64) (sighting, error) {
	w, err := witness.ReadWitnessed(g.dir.CosignaturesPath())
	if err != nil || w == nil {
		return sighting{}, nil // none, or unreadable: the witnesses themselves are asked
	}
	head, err := eventlog.OpenCheckpoint([]byte(w.Checkpoint), g.chain.NodeDID(), g.chain.PublicKey())
	if err != nil {
		return sighting{}, nil
	}
	if err := g.compare(head, []byte(w.Checkpoint), "the stored witnessed checkpoint"); err != nil {
		return sighting{}, err
	}
	return sighting{Size: head.Size, Where: "the stored witnessed checkpoint (" + g.dir.CosignaturesPath() + ")"}, nil
}

// forkError is a checkpoint of the node's key that its chain contradicts.
type forkError struct {
	where string
	size  int64
	tip   int64
	// evidence is the file that keeps what was seen.
	evidence string
	err      error
}

func (e *forkError) Error() string {
	return fmt.Sprintf("%s holds a tree of %d events that this chain does not extend (evidence %s): %v", e.where, e.size, e.evidence, e.err)
}

// compare holds head, a checkpoint of the node's key seen at where, to the
// chain: of a tree the chain has, its root must be the chain's.
func (g *forkGuard) compare(head eventlog.TreeHead, signed []byte, where string) error {
	tip := g.chain.TreeSize()
	if head.Size > tip {
		return nil
	}
	root, err := g.chain.TreeRoot(head.Size)
	if err != nil || root == head.Root {
		return nil
	}
	path, _ := transparency.WriteEvidence(g.dir.EvidencePrefix(), "forked", signed)
	return &forkError{where: where, size: head.Size, tip: tip, evidence: path,
		err: fmt.Errorf("at size %d its root is %s, this chain's %s", head.Size, transparency.B64(head.Root), transparency.B64(root))}
}

// forked holds the log for good on a fork.
func (g *forkGuard) forked(err error) bool {
	var fe *forkError
	b := eventlog.Behind{Reason: heldForked, Tip: g.chain.TreeSize(), Fork: true, Seen: err.Error()}
	if errors.As(err, &fe) {
		b.Size, b.Seen = fe.size, fe.where
	}
	g.hold(b)
	g.setNote("%v", err)
	return true
}

// askWitness asks r what tree of the node's key it holds: the chain's own
// size when it cosigns the chain's checkpoint, or its larger size (its 409).
func (g *forkGuard) askWitness(ctx context.Context, r witness.Remote) (int64, error) {
	head, signed, err := g.chain.TreeCheckpoint()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	return witness.HeldSize(ctx, g.client, r, signed, head.Size)
}

// release lets the log append, once the guard is satisfied; the first time,
// the recovered mark is cleared and writable runs.
func (g *forkGuard) release(ctx context.Context) {
	g.mu.Lock()
	first := !g.opened
	g.opened = true
	g.mu.Unlock()
	// writable first, while the log still holds (it appends through
	// AppendHeld), so a promoted node's node.promoted comes before any
	// client's write; it reads the mark, cleared after it.
	if first && g.writable != nil {
		if err := g.writable(ctx); err != nil {
			g.mu.Lock()
			g.opened = false
			g.mu.Unlock()
			g.hold(eventlog.Behind{Reason: heldWaiting, Tip: g.chain.TreeSize(), Seen: "the node's first write failed: " + err.Error()})
			return
		}
	}
	if g.chain.Held() != nil {
		g.logger.Info("the fork guard lets the node append", logkey.TreeSize, g.chain.TreeSize())
	}
	g.chain.Release()
	if first && g.recovered != "" {
		if err := g.dir.ClearRecovered(); err != nil {
			g.logger.Warn("clear the recovered mark", logkey.Err, err)
		}
	}
}
