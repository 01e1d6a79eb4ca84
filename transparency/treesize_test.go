package transparency

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// hugeSize is above 2^62, where tlog's proof checks loop for ever.
const hugeSize = 1<<62 + 5

// signedCheckpoint is a checkpoint of size with a made-up root, signed with
// the node key key, as a node that lies about its size would sign it.
func signedCheckpoint(t *testing.T, key ed25519.PrivateKey, size int64) []byte {
	t.Helper()
	pub := key.Public().(ed25519.PublicKey)
	name := "civnode/" + eventlog.DIDKey(pub)
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, v.KeyHash(), base64.StdEncoding.EncodeToString(append([]byte{1}, key.Seed()...)))
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: eventlog.CheckpointText(name, eventlog.TreeHead{Size: size, Root: sha256.Sum256([]byte("a root"))})}, s)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// within runs f and fails t unless it returns within a generous bound: a
// tool that spins on a size is the failure looked for.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s has not returned within 30 s: it spins on the tree size", what)
		return nil
	}
}

// hugeHost is a node that signs a checkpoint of hugeSize and proves it
// consistent with one made-up hash.
type hugeHost struct {
	logHost
	signed []byte
}

func (h hugeHost) Checkpoint(context.Context) ([]byte, error) { return h.signed, nil }

func (h hugeHost) Consistency(context.Context, eventlog.TreeHead, eventlog.TreeHead) (tlog.TreeProof, error) {
	return tlog.TreeProof{sha256.Sum256([]byte("a proof hash"))}, nil
}

// TestCheckRefusesHugeTreeSize: transparency check refuses, at once and with
// ErrTreeSize, a checkpoint beyond MaxTreeSize that the node serves or that
// the state file holds, and keeps the state it had.
func TestCheckRefusesHugeTreeSize(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	l := testLog(t, key, "main", 3)
	opts := CheckOptions{State: filepath.Join(t.TempDir(), "state.json")}
	if rep, err := Check(ctx, logHost{l}, "test", opts); err != nil || rep.Result != "trusted" {
		t.Fatalf("first check: %+v %v", rep, err)
	}
	before, err := os.ReadFile(opts.State)
	if err != nil {
		t.Fatal(err)
	}
	huge := signedCheckpoint(t, key, hugeSize)
	err = within(t, "check of a served checkpoint of 2^62+5", func() error {
		_, err := Check(ctx, hugeHost{logHost{l}, huge}, "test", opts)
		return err
	})
	if !errors.Is(err, eventlog.ErrTreeSize) {
		t.Fatalf("check of a served checkpoint of 2^62+5: %v, want ErrTreeSize", err)
	}
	if after, _ := os.ReadFile(opts.State); string(after) != string(before) {
		t.Fatal("the refused check changed the state file")
	}

	// A state file that holds such a checkpoint (written by hand, or by an
	// older checker) is refused too, before anything is fetched.
	if err := saveState(opts.State, State{VerifierKey: l.VerifierKey(), Checkpoint: string(huge)}); err != nil {
		t.Fatal(err)
	}
	err = within(t, "check from a stored checkpoint of 2^62+5", func() error {
		_, err := Check(ctx, hugeHost{logHost{l}, signedCheckpoint(t, key, hugeSize+1)}, "test", opts)
		return err
	})
	if !errors.Is(err, eventlog.ErrTreeSize) {
		t.Fatalf("check from a stored checkpoint of 2^62+5: %v, want ErrTreeSize", err)
	}
}

// hugeSource is a node whose head, witnessed checkpoint and seal are of
// hugeSize, and whose inclusion proofs are one made-up hash.
type hugeSource struct {
	Source
	signed []byte
	seal   eventlog.Seal
}

func (s hugeSource) Head(ctx context.Context) (string, []byte, error) {
	vkey, _, err := s.Source.Head(ctx)
	return vkey, s.signed, err
}

func (s hugeSource) Witnessed(context.Context) ([]byte, error) { return s.signed, nil }

func (s hugeSource) Inclusion(context.Context, uint64, int64) (tlog.RecordProof, error) {
	return tlog.RecordProof{sha256.Sum256([]byte("a proof hash"))}, nil
}

func (s hugeSource) Seal(context.Context) (eventlog.Seal, error) { return s.seal, nil }

// TestProveAndPublishRefuseHugeTreeSize: prove, prove --witnessed and
// publish refuse, at once and with ErrTreeSize, a node whose checkpoint or
// seal is beyond MaxTreeSize; prove refuses such a --tree-size too.
func TestProveAndPublishRefuseHugeTreeSize(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	l := testLog(t, key, "main", 3)
	huge := signedCheckpoint(t, key, hugeSize)
	// The seal's signature covers its chain hashes and time, not its
	// count: the node's own, with the count and checkpoint of the lie.
	seal, err := l.Seal()
	if err != nil {
		t.Fatal(err)
	}
	seal.EventCount, seal.Checkpoint = hugeSize, string(huge)
	src := hugeSource{Source: LogSource(l, "test"), signed: huge, seal: seal}

	for name, f := range map[string]func() error{
		"prove":             func() error { _, err := Prove(ctx, src, 1, 0); return err },
		"prove --witnessed": func() error { _, err := ProveWitnessed(ctx, src, 1); return err },
		"prove --tree-size": func() error { _, err := Prove(ctx, LogSource(l, "test"), 1, eventlog.MaxTreeSize+1); return err },
		"publish of a seal": func() error {
			_, err := Publish(ctx, hugeSource{Source: LogSource(l, "test"), signed: mustHead(t, l), seal: seal}, filepath.Join(t.TempDir(), "pub"), PublishOptions{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := within(t, name, f); !errors.Is(err, eventlog.ErrTreeSize) {
				t.Errorf("%v, want ErrTreeSize", err)
			}
		})
	}
}

func mustHead(t *testing.T, l *eventlog.Log) []byte {
	t.Helper()
	_, signed, err := l.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	return signed
}
