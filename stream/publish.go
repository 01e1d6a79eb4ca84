package stream

import (
	"encoding/json"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// HeaderSeq carries an event's seq on its message, so that a subscriber can
// order, deduplicate and resume without parsing the event.
const HeaderSeq = "Civnode-Seq"

// Publish publishes a durable group of events in seq order. It is the log's
// OnCommit hook: it hands each message to the in-process connection's buffer
// (it waits at most for the embedded server to read it, never for a
// subscriber) and never returns an error, because the log is the system of
// record and must not fail when NATS hiccups: an event NATS did not take is
// logged and counted (Status.PublishErrors) and stays in the log for replay.
// After Close it does nothing.
func (s *Server) Publish(events []eventlog.Event) error {
	for i := range events {
		ev := &events[i]
		m := &nats.Msg{
			Subject: EventSubject(s.did, ev.Type),
			Header:  nats.Header{HeaderSeq: []string{strconv.FormatUint(ev.Seq, 10)}},
			Data:    ev.Raw(),
		}
		if err := s.pub.PublishMsg(m); err != nil {
			if s.isClosed() {
				return nil
			}
			s.publishErrors.Add(1)
			s.log.Error("publish event", logkey.Seq, ev.Seq, logkey.Type, ev.Type, logkey.Err, err)
			// The live subscriptions would now hold a gap; their consumers
			// resume from the log instead.
			s.endAll(ErrSlowConsumer)
			continue
		}
		s.published.Add(1)
	}
	return nil
}

// ExportNotice is published on civnode.<node>.exports for every sealed export:
// enough for an observer to know that a bundle with this root, tip and
// signature exists, and to check the signature once it holds the bundle.
type ExportNotice struct {
	ExportID        string `json:"export_id"`
	NodeDID         string `json:"node_did"`
	ChainRootHash   string `json:"chain_root_hash"`
	ChainTipHash    string `json:"chain_tip_hash"`
	EventCount      uint64 `json:"event_count"`
	GeneratedAt     string `json:"generated_at"`
	BundleSignature string `json:"bundle_signature"`
}

// PublishExport publishes n on civnode.<node>.exports; errors are logged and
// counted, not returned: a notice is a courtesy, the export is the record.
func (s *Server) PublishExport(n ExportNotice) {
	data, err := json.Marshal(n)
	if err == nil {
		err = s.pub.Publish(ExportsSubject(s.did), data)
	}
	if err != nil && !s.isClosed() {
		s.publishErrors.Add(1)
		s.log.Error("publish export notice", logkey.ExportID, n.ExportID, logkey.Err, err)
	}
}

// PublishCheckpoint publishes a signed checkpoint note (docs/transparency.md) on
// civnode.<node>.checkpoints, header Civnode-Tree-Size = its tree size, so a
// monitor behind a leaf link learns of each new tree head without polling.
// Like an export notice it is a courtesy: errors are logged and counted.
func (s *Server) PublishCheckpoint(treeSize int64, note []byte) {
	msg := &nats.Msg{Subject: CheckpointsSubject(s.did), Data: note, Header: nats.Header{}}
	msg.Header.Set(HeaderTreeSize, strconv.FormatInt(treeSize, 10))
	if err := s.pub.PublishMsg(msg); err != nil && !s.isClosed() {
		s.publishErrors.Add(1)
		s.log.Error("publish checkpoint", logkey.TreeSize, treeSize, logkey.Err, err)
	}
}

// PublishWitnessed publishes a witnessed checkpoint (the note with its
// cosignatures) on civnode.<node>.checkpoints.witnessed.
func (s *Server) PublishWitnessed(treeSize int64, note []byte) {
	msg := &nats.Msg{Subject: WitnessedSubject(s.did), Data: note, Header: nats.Header{}}
	msg.Header.Set(HeaderTreeSize, strconv.FormatInt(treeSize, 10))
	if err := s.pub.PublishMsg(msg); err != nil && !s.isClosed() {
		s.publishErrors.Add(1)
		s.log.Error("publish witnessed checkpoint", logkey.TreeSize, treeSize, logkey.Err, err)
	}
}

// HeaderTreeSize carries a checkpoint's tree size beside its note.
const HeaderTreeSize = "Civnode-Tree-Size"

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
