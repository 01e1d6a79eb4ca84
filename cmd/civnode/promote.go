package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

// promoteAskTimeout bounds one question to a witness.
const promoteAskTimeout = 10 * time.Second

// promotedOriginKey is where promote moves a promoted data dir's origin.vkey:
// kept for the operator, and no longer where a mirror's pinned key is read.
const promotedOriginKey = "origin.vkey.promoted"

// promoteStep, when set (by tests), is called before each step that changes
// the data dir, named by the step; an error stops promote there, as a kill
// would.
var promoteStep func(step string) error

// promoteCmd is civnode promote: a mirror's data dir made the node's, with
// the origin's key, once it is known to hold the newest published tree.
type promoteCmd struct {
	m                           *Main
	g                           *globals
	dataDir, keyFile, published string
	noPublished                 bool
	witnesses                   []string
	quorum                      int
}

func newPromoteCommand(m *Main, g *globals) *cobra.Command {
	c := &promoteCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "promote --data-dir MIRROR --key KEYFILE (--published DIR|URL | --no-published)",
		Short: "Make a mirror's data dir the node's, with the origin's key, if it holds the newest published tree",
		Long:  promoteHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.check(); err != nil {
				return err
			}
			return c.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.dataDir, "data-dir", "", "the mirror's data dir to promote (required)")
	f.StringVar(&c.keyFile, "key", "", "the origin's node key (PKCS#8 PEM, a node.key): it must be the key the mirror pinned (required)")
	f.StringVar(&c.published, "published", "", "the directory or URL where the origin's chain is published: its checkpoint must be no larger than the mirror's tree, and consistent with it")
	f.BoolVar(&c.noPublished, "no-published", false, "promote without comparing the mirror with a published checkpoint (a warning says what that risks)")
	f.StringArrayVar(&c.witnesses, "witness", nil, "a witness of the origin, VKEY@URL (repeatable): each is asked which tree it holds, and promote refuses if one holds a larger tree than the mirror")
	f.IntVar(&c.quorum, "witness-quorum", 1, "how many --witness witnesses must answer")
	return cmd
}

// check refuses a command line that cannot be run.
func (c *promoteCmd) check() error {
	switch {
	case c.dataDir == "":
		return usageErrorf("--data-dir is required: the mirror's data dir to promote")
	case c.keyFile == "":
		return usageErrorf("--key is required: the origin's node key")
	case c.published == "" && !c.noPublished:
		return usageErrorf("--published DIR|URL is required (or --no-published to promote without comparing the mirror with the published chain)")
	case c.published != "" && c.noPublished:
		return usageErrorf("--published and --no-published exclude each other")
	case len(c.witnesses) > 0 && (c.quorum < 1 || c.quorum > len(c.witnesses)):
		return usageErrorf("--witness-quorum must be from 1 to the number of --witness flags (%d)", len(c.witnesses))
	}
	for _, w := range c.witnesses {
		if _, err := witness.ParseRemote(w); err != nil {
			return usageErrorf("--witness %q: %v", w, err)
		}
	}
	return nil
}

func (c *promoteCmd) run(ctx context.Context) (err error) {
	m := c.m
	logger, err := m.logger(c.g)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(c.dataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	dir := datadir.Dir(abs)
	key, err := datadir.LoadNodeKey(c.keyFile, logger)
	if err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	if done, err := c.resume(dir, key, logger); done || err != nil {
		return err
	}
	if !dir.IsMirror() {
		return fmt.Errorf("%s is not a mirror's data dir (it has no %s): only a mirror's can be promoted", dir, filepath.Base(dir.OriginKeyPath()))
	}
	origin, err := dir.PinnedOrigin()
	if err != nil {
		return err
	}
	if !origin.PublicKey().Equal(key.Public()) {
		return fmt.Errorf("--key %s is not the key of %s, the origin this mirror copied: promote needs that origin's own node.key", c.keyFile, origin.Origin)
	}
	// Held open to the end: the database's lock keeps a mirror from
	// starting on the data dir while it changes.
	chain, err := dir.OpenMirrorLog(origin.PublicKey(), logger, eventlog.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := chain.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	size := chain.TreeSize()
	if size == 0 {
		return fmt.Errorf("the mirror in %s holds no events yet: nothing to promote", dir)
	}
	if err := c.checkPublished(ctx, chain, dir); err != nil {
		return err
	}
	if err := c.askWitnesses(ctx, chain); err != nil {
		return err
	}
	instance, err := promoteDataDir(dir, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "promoted %s: the node of %s, instance %s, at tree size %d\n", dir, origin.Origin, instance, size)
	fmt.Fprintf(m.Stdout, "start it with civnode serve --data-dir %s (with its --published and --witness): its first event is node.promoted; fence the old primary: it must never serve writes again\n", dir)
	return nil
}

// resume finishes a promotion that stopped after node.key was written and
// before origin.vkey was moved away (done true): the data dir is already the
// node's (a serve may even have run on it), only origin.vkey is left. A
// node's own data dir, or one promoted already, is refused.
func (c *promoteCmd) resume(dir datadir.Dir, key ed25519.PrivateKey, logger *slog.Logger) (done bool, err error) {
	own, err := datadir.LoadNodeKey(dir.KeyPath(), logger)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if _, err := os.Stat(dir.OriginKeyPath()); err != nil {
		return true, fmt.Errorf("%w: %s; promote turns a mirror's data dir into a node's", datadir.ErrNotAMirror, dir)
	}
	if !own.Equal(key) {
		return true, fmt.Errorf("--key %s is not the node.key an interrupted promote of %s wrote", c.keyFile, dir)
	}
	if err := moveOriginKey(dir); err != nil {
		return true, err
	}
	fmt.Fprintf(c.m.Stdout, "finished the promotion of %s that an earlier promote began; start it with civnode serve --data-dir %s\n", dir, dir)
	return true, nil
}

// checkPublished refuses a mirror behind the published checkpoint, or one
// that contradicts it; without a published source it warns.
func (c *promoteCmd) checkPublished(ctx context.Context, chain *eventlog.Log, dir datadir.Dir) error {
	size := chain.TreeSize()
	if c.published == "" {
		fmt.Fprintf(c.m.Stderr, "warning: the mirror (%d events) was not compared with where the origin published its chain. If observers saw a larger tree, the promoted node's first write forks the history they saw; start it with serve --published and --witness so its fork guard checks (docs/operations.md)\n", size)
		return nil
	}
	head, signed, err := transparency.PublishedHead(ctx, chain, c.published)
	if err != nil {
		return fmt.Errorf("read the published checkpoint: %w", err)
	}
	if head.Size > size {
		return fmt.Errorf("the mirror holds %d events and %s publishes a tree of %d: catch the mirror up (civnode mirror --once) and promote again", size, c.published, head.Size)
	}
	root, err := chain.TreeRoot(head.Size)
	if err != nil {
		return err
	}
	if root != head.Root {
		path, _ := transparency.WriteEvidence(dir.EvidencePrefix(), "forked", signed)
		return fmt.Errorf("%w: %s publishes a tree of %d events with root %s, the mirror's of that size has root %s (evidence %s)",
			transparency.ErrForked, c.published, head.Size, transparency.B64(head.Root), transparency.B64(root), path)
	}
	fmt.Fprintf(c.m.Stdout, "published checkpoint at size %d: the mirror holds it (%d events)\n", head.Size, size)
	return nil
}

// askWitnesses asks each witness which tree of the origin it holds, with
// the origin's checkpoint of the mirror's size: it refuses when any holds a
// larger one, and when fewer than the quorum answered.
func (c *promoteCmd) askWitnesses(ctx context.Context, chain *eventlog.Log) error {
	if len(c.witnesses) == 0 {
		return nil
	}
	// Every witness is asked with the checkpoint of the seal's tree, the one
	// the mirror holds signed; a tail taken for one witness only raises the
	// tree the others' answers are held to.
	asked := chain.TreeSize()
	_, signed, err := chain.TreeCheckpointAt(asked)
	if err != nil {
		return fmt.Errorf("the origin's checkpoint of the mirror's tree (%d events), to ask the witnesses with: %w", asked, err)
	}
	answered := 0
	for _, w := range c.witnesses {
		r, err := witness.ParseRemote(w) // checked by check
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, promoteAskTimeout)
		held, err := witness.HeldSize(actx, nil, r, signed, asked)
		cancel()
		if errors.Is(err, witness.ErrHeldAnotherTree) {
			return fmt.Errorf("witness %s: %w: the mirror's chain is not the one the witness cosigned", r.Name(), err)
		}
		if err != nil {
			fmt.Fprintf(c.m.Stderr, "witness %s did not answer: %v\n", r.Name(), err)
			continue
		}
		if held > chain.TreeSize() && c.published != "" {
			// The origin may have stopped between the witness's cosignature
			// and writing the checkpoint that names it: the tree's events
			// are published in bundles beyond the seal.
			if err := c.catchUpTail(ctx, chain, r.Name(), held); err != nil {
				return err
			}
		}
		if size := chain.TreeSize(); held > size {
			return fmt.Errorf("witness %s holds a tree of %d events of the origin, the mirror %d: the origin published more than the mirror holds; catch the mirror up and promote again", r.Name(), held, size)
		}
		answered++
		fmt.Fprintf(c.m.Stdout, "witness %s holds no larger tree (it holds %d events)\n", r.Name(), held)
	}
	if answered < c.quorum {
		return fmt.Errorf("%d of the %d witnesses answered, the quorum is %d: whether the origin published more than the mirror holds is not known", answered, len(c.witnesses), c.quorum)
	}
	return nil
}

// catchUpTail adds to the mirror the events of the tree of held events a
// witness cosigned from the bundles published beyond the seal
// (transparency.IngestTail), each checked against the origin's key and its
// link. No signed checkpoint names that tree yet: the promoted node's fork
// guard appends only once the witnesses cosign its checkpoint of it, which
// they do only if it is the very tree they hold.
func (c *promoteCmd) catchUpTail(ctx context.Context, chain *eventlog.Log, name string, held int64) error {
	client, err := transparency.PublishedClient(c.published)
	if err != nil {
		return err
	}
	defer client.Close()
	n, err := transparency.IngestTail(ctx, client, chain, held)
	if n > 0 {
		fmt.Fprintf(c.m.Stdout, "witness %s holds a tree of %d events: %d more events taken from the bundles published beyond the seal (the promoted node appends once the witnesses cosign that tree)\n", name, held, n)
	}
	if err != nil && chain.TreeSize() < held {
		fmt.Fprintf(c.m.Stderr, "the tail witness %s holds is not all published: %v\n", name, err)
	}
	return nil
}

// promoteDataDir turns the checked mirror's data dir into the node's, in an
// order a kill cannot split: first what a mirror ignores (a new instance id,
// the recovered mark that holds the node until the fork guard is satisfied),
// then node.key, linked into place whole (from then on serve opens the data
// dir as the node's own chain), then origin.vkey moved away. A kill before
// node.key leaves the mirror, and promote runs again from the start; a kill
// after it leaves the promoted node, which a second promote finishes.
func promoteDataDir(dir datadir.Dir, key ed25519.PrivateKey) (instance string, err error) {
	if err := promoteFault("instance"); err != nil {
		return "", err
	}
	if instance, err = dir.NewInstanceID(); err != nil {
		return "", err
	}
	if err := promoteFault("mark"); err != nil {
		return "", err
	}
	if err := dir.MarkRecovered(datadir.RecoveredByPromote); err != nil {
		return "", fmt.Errorf("mark the data dir as promoted: %w", err)
	}
	if err := promoteFault("key"); err != nil {
		return "", err
	}
	if err := datadir.WriteNodeKey(dir.KeyPath(), key); err != nil {
		return "", err
	}
	return instance, moveOriginKey(dir)
}

// moveOriginKey moves origin.vkey aside, durably.
func moveOriginKey(dir datadir.Dir) error {
	if err := promoteFault("origin"); err != nil {
		return err
	}
	if err := os.Rename(dir.OriginKeyPath(), filepath.Join(string(dir), promotedOriginKey)); err != nil {
		return fmt.Errorf("move the mirror's origin key aside: %w", err)
	}
	return atomicfile.SyncDir(string(dir))
}

// promoteFault runs promoteStep, the tests' kill, when set.
func promoteFault(step string) error {
	if promoteStep == nil {
		return nil
	}
	return promoteStep(step)
}
