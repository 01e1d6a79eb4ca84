package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

// mirrorFlags are the flags civnode mirror and serve --mirror-of share: where
// the origin's chain comes from and which key it must be signed with.
type mirrorFlags localnode.MirrorSource

// add adds the flags, the token's and interval's names prefixed (serve has
// flags of its own).
func (c *mirrorFlags) add(cmd *cobra.Command, prefix string) {
	f := cmd.Flags()
	f.StringVar(&c.VerifierKey, "verifier-key", "", "the origin's note verifier key, instead of trusting the one the source serves on the first run")
	f.StringVar(&c.Token, prefix+"token", "", "follow a node's API with this observer or owner token, instead of a published directory")
	f.DurationVar(&c.Interval, prefix+"interval", 10*time.Second, "how often to look for a new seal while following")
	f.StringArrayVar(&c.Witnesses, prefix+"witness", nil, "take only a tree cosigned by the witness with the cosignature/v1 verifier key `VKEY` (repeatable; with --"+prefix+"quorum)")
	f.IntVar(&c.Quorum, prefix+"quorum", 1, "how many of the --"+prefix+"witness witnesses must have cosigned the source's tree")
	f.DurationVar(&c.MaxAge, prefix+"max-age", transparency.DefaultMaxAge, "the oldest cosignature that counts")
	f.StringVar(&c.CAFile, prefix+"ca-file", "", localnode.CAFileHelp)
}

// source is the source of a mirror of from, checked as a URL.
func (c mirrorFlags) source(from string) (localnode.MirrorSource, error) {
	if _, err := transparency.NodeURL(from); err != nil {
		return localnode.MirrorSource{}, usageError{err}
	}
	if c.Quorum < 1 || len(c.Witnesses) > 0 && c.Quorum > len(c.Witnesses) {
		return localnode.MirrorSource{}, usageErrorf("the quorum must be from 1 to the number of witnesses (%d)", max(1, len(c.Witnesses)))
	}
	for _, vkey := range c.Witnesses {
		if _, err := witness.NewCosignatureVerifier(vkey); err != nil {
			return localnode.MirrorSource{}, usageErrorf("--witness %s: %v", vkey, err)
		}
	}
	src := localnode.MirrorSource(c)
	src.From = from
	return src, nil
}

func newMirrorCommand(m *Main, g *globals) *cobra.Command {
	var cfg mirrorFlags
	var from, dataDir string
	var once bool
	cmd := &cobra.Command{
		Use:   "mirror --from URL --data-dir DIR [--verifier-key VKEY] [--once]",
		Short: "Follow another node's chain from a published directory, verifying every event and checkpoint",
		Long:  mirrorHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usageErrorf("mirror needs --from URL")
			}
			src, err := cfg.source(from)
			if err != nil {
				return err
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			dir, err := datadir.Resolve(dataDir, m.Getenv, m.HomeDir)
			if err != nil {
				return err
			}
			return runMirror(cmd.Context(), m, logger, dir, src, once)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "base URL of the published directory (or of the node's API, with --token)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", datadir.Help)
	cmd.Flags().BoolVar(&once, "once", false, "catch up to the source's current seal and exit")
	cfg.add(cmd, "")
	return cmd
}

// runMirror follows src into dir, once or until ctx is done, printing a
// line for each run that stored events.
func runMirror(ctx context.Context, m *Main, logger *slog.Logger, dir datadir.Dir, src localnode.MirrorSource, once bool) error {
	if err := dir.Create(logger); err != nil {
		return err
	}
	c, k, err := localnode.OpenMirrorSource(ctx, logger, dir, src, once)
	if err != nil {
		if !once && ctx.Err() != nil {
			return nil // stopped while the source was down
		}
		return err
	}
	defer c.Close()
	l, err := dir.OpenMirrorLog(k.PublicKey(), logger, eventlog.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	return localnode.FollowMirror(ctx, logger, c, l, dir, src, once, func(rep transparency.Mirrored) {
		fmt.Fprintln(m.Stdout, mirroredLine(k, c.Via(), rep))
	})
}

func mirroredLine(k transparency.Key, via string, rep transparency.Mirrored) string {
	if rep.Result == "unchanged" {
		return fmt.Sprintf("unchanged: %s tree size %d, root %s, at %s", k.Origin, rep.Head.Size, transparency.B64(rep.Head.Root), via)
	}
	return fmt.Sprintf("mirrored %s tree size %d, root %s, from %s: %d events stored", k.Origin, rep.Head.Size, transparency.B64(rep.Head.Root), via, rep.Events)
}
