package eventlog

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The committer makes each group durable in two stages, each on its own
// goroutine, so that one group's fsync overlaps the next group's work:
//
//   - runCommitter waits for a group's signatures, writes the group's batch
//     to Pebble's WAL and memtable without waiting for the fsync
//     (DB.ApplyNoSyncWait), takes the snapshot that will become the models'
//     durable view, and hands the group on;
//   - runSyncer waits for that group's fsync (Batch.SyncWait), then publishes
//     the new tip and the snapshot and releases the group's callers.
//
// One goroutine doing both would sit idle through every fsync while the next
// group's signatures were done and waiting for it; BenchmarkAppend/callers=64
// shows the overlap. Groups are applied, synced and released in the order the
// sequencer made them: Pebble's WAL is written in order, and one fsync covers
// everything applied before it.
//
// A group's callers are released, and its events counted in the tip, only
// after its fsync; queries read the snapshot published then (durablesnap.go).
// Only the sequencer, which must see every decision before its own, reads
// what is applied but not yet durable, through its overlay.

// appliedGroup is a group Pebble has applied, on its way to the syncer.
type appliedGroup struct {
	g     *group
	batch *pebble.Batch // nil when nothing was applied
	// snap is the models as of this group, published once it is durable;
	// nil for a log without models.
	snap  *durableSnapshot
	start time.Time
	// err is why the group was not applied; its callers get it.
	err error
}

// runCommitter applies each group in turn and hands it to runSyncer, which
// it starts and waits for.
func (l *Log) runCommitter() {
	defer close(l.stopped)
	// Unbuffered: while the syncer waits for one group's fsync, one more group
	// may be applied and wait here. A further group waits in the sequencer,
	// where it goes on growing.
	toSync := make(chan appliedGroup)
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		l.runSyncer(toSync)
	}()
	for g := range l.groups {
		g.signed.Wait()
		a := appliedGroup{g: g, err: l.Healthy()}
		if a.err == nil && len(g.pending) > 0 {
			a.err = l.apply(&a)
		}
		toSync <- a
	}
	close(toSync)
	<-synced
}

// apply writes a's group to Pebble without waiting for its fsync.
func (l *Log) apply(a *appliedGroup) error {
	g := a.g
	sb := &l.sorted // the committer's own
	for _, p := range g.pending {
		p.write(sb)
	}
	writeTree(sb, g.pending)
	last := g.pending[len(g.pending)-1]
	sp := l.liveModels()
	if sp != nil {
		sp.apply(sb, g.models)
		sb.Set(sp.key(modelAppliedKey), appendU64(nil, last.ev.Seq), nil)
	}
	if last.tree != nil {
		sb.Set(metaTreeSizeKey, appendU64(nil, last.ev.Seq), nil)
	}
	if g.pending[0].ev.Seq == 1 {
		// An ingested genesis event: Open wrote none (Options.Ingest).
		sb.Set(metaSchemaKey, []byte(schemaVersion), nil)
	}
	b := l.db.NewBatch()
	sb.writeTo(b)
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	a.start = time.Now()
	if err := withFatal(func() error { return l.db.ApplyNoSyncWait(b, pebble.Sync) }); err != nil {
		// Not applied, so there is no fsync to wait for.
		if l.onGroup != nil {
			l.onGroup(GroupCommit{Events: len(g.pending), Duration: time.Since(a.start), Err: err})
		}
		l.fail(fmt.Errorf("commit seq %d..%d: %w", g.pending[0].ev.Seq, last.ev.Seq, err))
		return err
	}
	a.batch = b
	l.unsynced.Add(1) // under commitMu: Backup waits for it there
	if sp != nil {
		// The sequencer now reads these writes from Pebble.
		sp.settle(g.models)
		releaseWrites(g.models)
		g.models = nil
		// Taken before the next group is applied, so it holds this group's
		// writes and no later ones.
		a.snap = l.newDurable(sp)
	}
	return nil
}

// runSyncer waits for each applied group's fsync, then makes it the tip and
// releases its callers. After a failed fsync the log is failed for good: an
// fsync is never retried, and no group after it counts as durable. Pebble's
// WAL already reports a failed sync's error to every later one; broken keeps
// that rule here whatever a later SyncWait says.
func (l *Log) runSyncer(in <-chan appliedGroup) {
	var broken error // the first failed fsync
	for a := range in {
		err := a.err
		if a.batch != nil {
			serr := withFatal(a.batch.SyncWait)
			g := a.g
			if l.onGroup != nil {
				l.onGroup(GroupCommit{Events: len(g.pending), Duration: time.Since(a.start), Err: serr})
			}
			if serr != nil {
				l.fail(fmt.Errorf("commit seq %d..%d: %w", g.pending[0].ev.Seq, g.pending[len(g.pending)-1].ev.Seq, serr))
				if broken == nil {
					broken = serr
				}
				err = serr
			} else if broken != nil {
				err = broken
			}
			a.batch.Close()
			if err == nil {
				l.publish(a)
			} else if a.snap != nil {
				a.snap.release()
			}
			l.unsynced.Done()
		}
		l.release(a.g, err)
	}
}

// publish makes a durable group the tip, and its snapshot the models' view,
// before its callers are released.
func (l *Log) publish(a appliedGroup) {
	first, last := a.g.pending[0], a.g.pending[len(a.g.pending)-1]
	l.mu.Lock()
	for _, p := range a.g.pending {
		l.typeCounts[p.ev.Type] = p.ordinal
	}
	l.tip = Tip{Seq: last.ev.Seq, ID: last.ev.ID, Micros: last.micros}
	if first.ev.Seq == 1 {
		l.root = first.ev.ID
	}
	l.mu.Unlock()
	if a.snap != nil {
		l.publishDurable(a.snap)
	}
}

// release hands each request of g its events, or err, runs the commit hook,
// and lets the callers go.
func (l *Log) release(g *group, err error) {
	k := 0
	for _, r := range g.reqs {
		if r.err != nil {
			continue
		}
		if err != nil {
			r.err = fmt.Errorf("%w: %w", ErrFailed, err)
		} else {
			r.events = make([]Event, r.n)
			for i, p := range g.pending[k : k+r.n] {
				r.events[i] = *p.ev
			}
		}
		k += r.n
	}
	if err == nil && l.onCommit != nil && len(g.pending) > 0 {
		events := make([]Event, 0, len(g.pending))
		for _, p := range g.pending {
			events = append(events, *p.ev)
		}
		if herr := l.onCommit(events); herr != nil {
			l.fail(fmt.Errorf("commit hook at seq %d: %w", g.pending[len(g.pending)-1].ev.Seq, herr))
		}
	}
	for _, r := range g.reqs {
		close(r.done)
	}
}
