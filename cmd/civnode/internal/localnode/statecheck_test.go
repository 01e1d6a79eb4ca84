package localnode

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/statemap"
)

// committedChain appends rounds of missions to a new log, each round
// followed by a state commitment, as serve's committer makes them; the
// commitment of round forge (counted from 0; -1: none) signs another root.
// It returns the log and the seqs of the commitments.
func committedChain(t *testing.T, rounds, perRound, forge int) (*eventlog.Log, []uint64) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	l, err := eventlog.Open(eventlog.Options{Dir: t.TempDir(), Key: key, Models: projections.Folder{State: true},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx := context.Background()
	var seqs []uint64
	for r := range rounds {
		drafts := make([]eventlog.Draft, perRound)
		for i := range drafts {
			id := fmt.Sprintf("019b0000-0000-7000-8000-%012d", r*perRound+i)
			drafts[i] = eventlog.Draft{Type: events.TypeMissionCreated, Payload: events.MissionCreated{MissionID: id,
				Title: "t", Description: "d", Publisher: "pub", PublisherKind: "agent", IssuerDID: l.NodeDID(),
				Domain: "research", SubnetID: "s", Reward: events.Reward{AgentCredit: 10}, Payload: json.RawMessage(`{}`)}}
		}
		if _, err := l.Append(ctx, drafts...); err != nil {
			t.Fatal(err)
		}
		_, _, err := projections.CommitState(l, func(c projections.StateCommit) (uint64, error) {
			root := c.Root.String()
			if r == forge {
				root = statemap.HashValue([]byte("forged")).String()
			}
			evs, err := l.Append(ctx, eventlog.Draft{Type: events.TypeStateCommitted,
				Payload: events.StateCommitted{ThroughSeq: c.ThroughSeq, StateRoot: root, Entries: c.Entries}})
			if err != nil {
				return 0, err
			}
			seqs = append(seqs, evs[0].Seq)
			return evs[0].Seq, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return l, seqs
}

// checkChain runs a ChainCheck of l that looks for commitments beside the
// import every millisecond.
func checkChain(t *testing.T, l *eventlog.Log) (*ChainCheck, int, error) {
	t.Helper()
	c, err := OpenChainCheck(l, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.pause = time.Millisecond
	if _, err := c.Verify(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	n, err := c.States(context.Background())
	return c, n, err
}

// TestChainCheckBesideTheImport: the commitments are checked while the
// chain is imported, and States counts those and the rest; a forged one
// found during the import is States' answer, with the count before it. The
// chain is longer than two of the import's groups (1,024 events each), so
// that the import makes some durable before it ends.
func TestChainCheckBesideTheImport(t *testing.T) {
	const rounds, perRound = 12, 200
	l, seqs := committedChain(t, rounds, perRound, -1)
	c, n, err := checkChain(t, l)
	if err != nil || n != rounds {
		t.Fatalf("checked %d of %d commitments: %v", n, rounds, err)
	}
	if c.checked == 0 {
		t.Errorf("none of %d commitments was checked beside the import", rounds)
	}

	l, seqs = committedChain(t, rounds, perRound, 2)
	c, n, err = checkChain(t, l)
	var m *projections.StateMismatch
	if !errors.As(err, &m) || m.Seq != seqs[2] || n != 2 {
		t.Fatalf("a forged third commitment: checked %d, %v; want the one at seq %d named", n, err, seqs[2])
	}
	if c.ended == nil {
		t.Error("the forged commitment was not found beside the import")
	}
}
