package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/cockroachdb/pebble/v2"
)

// Corruption. Pebble checksums every block of its sstables. A block that fails
// is reported twice: to the DataCorruption hook of its event listener, from
// whatever read met it (a query, a verify, a background compaction), and as the
// error of that read. Pebble's default hook calls Logger.Fatalf, which here
// panics (pebbleLogger), so the log installs its own: corruption is an error,
// never a panic. The hook fails the log, so the node stops taking writes and
// says it is unhealthy; the read returns ErrCorrupt, naming the file and, for
// events, the seqs it could not read.

// sawCorruption is the log's DataCorruption hook. Pebble calls it on the read
// path, so it must not block or read.
func (l *Log) sawCorruption(info pebble.DataCorruptionInfo) {
	l.markCorrupt(info.Path, firstLine(info.Details))
}

// markCorrupt fails the log for a damaged file and logs each file once: a
// damaged block is met again by every read that reaches it.
func (l *Log) markCorrupt(path, detail string) {
	l.mu.Lock()
	seen := l.damaged[path]
	l.damaged[path] = true
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: cannot read %s: %s", ErrCorrupt, path, detail)
	}
	l.mu.Unlock()
	if !seen {
		l.log.Error("the store is corrupt: the event log takes no more writes; restore the data dir from a backup",
			logkey.File, path, logkey.Err, detail)
	}
}

// readFault returns err, or for Pebble's report of corruption an ErrCorrupt
// *ChainError naming the damaged file, and fails the log.
func (l *Log) readFault(err error) error {
	if err == nil || !pebble.IsCorruptionError(err) {
		return err
	}
	l.markCorrupt(corruptFile(err), corruptDetail(err))
	return storeFault(err)
}

// storeFault returns err, or for Pebble's report of corruption an ErrCorrupt
// *ChainError naming the damaged file, in one line.
func storeFault(err error) error {
	if err == nil || !pebble.IsCorruptionError(err) {
		return err
	}
	return &ChainError{Err: ErrCorrupt, Reason: corruptionReason(err)}
}

// unreadable is the error for the events from seq on that a damaged block
// hides: the range ends at the last seq before reads succeed again, at most at
// end. It fails the log.
func (l *Log) unreadable(seq, end uint64, err error) *ChainError {
	l.markCorrupt(corruptFile(err), corruptDetail(err))
	return &ChainError{Err: ErrCorrupt, Seq: seq, Last: l.lastUnreadable(seq, max(seq, end)), Reason: corruptionReason(err)}
}

// lastUnreadable finds where the events that cannot be read end, given that
// from cannot be: it gallops forward to the first event that reads, then
// bisects back, so a damaged index block over a million events costs a few
// dozen reads. A damaged block covers consecutive keys, so the answer is exact
// for one damaged block; with several it ends the first run of damage that
// the bisection meets.
func (l *Log) lastUnreadable(from, end uint64) uint64 {
	readable := func(seq uint64) bool {
		_, closer, err := l.db.Get(eventKey(seq))
		if err == nil {
			closer.Close()
		}
		return !pebble.IsCorruptionError(err)
	}
	bad, good := from, end+1 // bad cannot be read; good can, or is past end
	for step := uint64(1); bad+step < good; step *= 2 {
		if readable(bad + step) {
			good = bad + step
			break
		}
		bad += step
	}
	for good-bad > 1 {
		mid := bad + (good-bad)/2
		if readable(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return bad
}

// corruptionReason says which file is damaged and how, in one line.
func corruptionReason(err error) string {
	if f := corruptFile(err); f != "" {
		return fmt.Sprintf("cannot read %s: %s", f, corruptDetail(err))
	}
	return corruptDetail(err)
}

func corruptFile(err error) string {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		return info.Path
	}
	return ""
}

func corruptDetail(err error) string {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil && info.Details != nil {
		return firstLine(info.Details)
	}
	return firstLine(err)
}

// firstLine is err's message up to its first line break: Pebble joins a
// detail carrier to its corruption errors on a second line, and the message
// must fit the one line that verify prints.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// CheckStore reads every key and value of the store that Verify does not (the
// indexes, the audit log, the records and the read models), so that a damaged
// block anywhere is found while the node is stopped rather than by a request
// later. Damage there is ErrCorrupt naming the file; it fails the log like any
// corrupt read. It stops with ctx's error once ctx is done.
func (l *Log) CheckStore(ctx context.Context) error {
	for _, r := range [][2]byte{{spaceMeta, spaceEvent}, {spaceEvent + 1, 0xff}} {
		if err := l.readAll(ctx, []byte{r[0]}, []byte{r[1]}); err != nil {
			return err
		}
	}
	return nil
}

// readAll reads every value in [lower, upper).
func (l *Log) readAll(ctx context.Context, lower, upper []byte) error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("check the store: %w", l.readFault(err))
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if _, err := it.ValueAndErr(); err != nil {
			return l.outsideEvents(err)
		}
	}
	if err := it.Error(); err != nil {
		return l.outsideEvents(err)
	}
	return nil
}

// outsideEvents is the error for a failed read of the keys beside the chain.
func (l *Log) outsideEvents(err error) error {
	var ce *ChainError
	if err := l.readFault(err); errors.As(err, &ce) {
		return chainErr(ErrCorrupt, 0, "outside the events (indexes, audit log, records or read models): %s", ce.Reason)
	}
	return fmt.Errorf("check the store: %w", err)
}
