package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// mirrorConfig is what civnode mirror and serve --mirror-of share: where the
// origin's chain comes from and which key it must be signed with.
type mirrorConfig struct {
	from        string
	token       string
	verifierKey string
	interval    time.Duration
}

// flags adds the flags of c, the token's and interval's names prefixed
// (serve has flags of its own).
func (c *mirrorConfig) flags(cmd *cobra.Command, prefix string) {
	f := cmd.Flags()
	f.StringVar(&c.verifierKey, "verifier-key", "", "the origin's note verifier key, instead of trusting the one the source serves on the first run")
	f.StringVar(&c.token, prefix+"token", "", "follow a node's API with this observer or owner token, instead of a published directory")
	f.DurationVar(&c.interval, prefix+"interval", 10*time.Second, "how often to look for a new seal while following")
}

func (m *Main) newMirrorCommand(g *globals) *cobra.Command {
	var cfg mirrorConfig
	var dataDir string
	var once bool
	cmd := &cobra.Command{
		Use:   "mirror --from URL --data-dir DIR [--verifier-key VKEY] [--once]",
		Short: "Follow another node's chain from a published directory, verifying every event and checkpoint",
		Long: `mirror keeps a verified copy of another node's chain (the origin's) in a data dir
of its own. --from is the base URL of a directory that transparency publish
writes, served by any static host or CDN (URL/seal, URL/tile/..., URL/events/...),
or, with --token, a node's API.

Every event is checked: it must be the leaf the origin's signed tree holds at
its place (the tiles, each checked against the signed root), its id the hash
of its content, its signature the origin's, its prev_hash the event before it.
Every seal is checked: its bundle_signature and checkpoint must be the
origin's and its tree must extend the one the mirror holds. The origin's key
is pinned on the first run (--verifier-key, or the source's verifier-key file)
in DIR/origin.vkey. A mirror's data dir has no node.key: it never signs.

A problem (a forked or rolled-back checkpoint, another key's, an event or a
bundle that does not verify) stops it with exit status 1 naming the seq or the
checkpoint; nothing that failed is stored, and what the source served is kept
in DIR/mirror.evidence-<UTC time>-<problem>.json. It survives kill -9 at any
point: the next run resumes where the store ends.

--once catches up to the source's current seal and exits 0, for cron and
tests; without it mirror keeps following, every --interval. civnode serve
--mirror-of URL follows and serves the mirror read-only in one process.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.from == "" {
				return usageErrorf("mirror needs --from URL")
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			dir, err := datadir.Resolve(dataDir, m.Getenv, m.HomeDir)
			if err != nil {
				return err
			}
			return m.mirror(cmd.Context(), logger, dir, cfg, once)
		},
	}
	cmd.Flags().StringVar(&cfg.from, "from", "", "base URL of the published directory (or of the node's API, with --token)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", datadir.Help)
	cmd.Flags().BoolVar(&once, "once", false, "catch up to the source's current seal and exit")
	cfg.flags(cmd, "")
	return cmd
}

func (m *Main) mirror(ctx context.Context, logger *slog.Logger, dir datadir.Dir, cfg mirrorConfig, once bool) error {
	if err := dir.Create(logger); err != nil {
		return err
	}
	c, k, err := openMirrorSource(ctx, dir, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := dir.OpenMirrorLog(k.PublicKey(), logger, eventlog.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	return followMirror(ctx, c, l, dir, cfg, once, func(rep transparency.Mirrored) {
		fmt.Fprintln(m.Stdout, mirroredLine(k, c.Via(), rep))
	})
}

// openMirrorSource makes the client of the source and pins the origin's key
// in dir on the first run; a later run requires the same key.
func openMirrorSource(ctx context.Context, dir datadir.Dir, cfg mirrorConfig) (*transparency.Client, transparency.Key, error) {
	pinned, err := dir.OriginKey()
	if err != nil {
		return nil, transparency.Key{}, err
	}
	if pinned != "" && cfg.verifierKey != "" && pinned != cfg.verifierKey {
		return nil, transparency.Key{}, fmt.Errorf("%s holds the origin key %s, not --verifier-key %s; a mirror follows one origin",
			dir.OriginKeyPath(), pinned, cfg.verifierKey)
	}
	c, err := observerClient(cfg.from, cfg.token)
	if err != nil {
		return nil, transparency.Key{}, err
	}
	vkey := pinned
	if vkey == "" {
		vkey = cfg.verifierKey
	}
	k, err := transparency.MirrorKey(ctx, c, cfg.token != "", vkey)
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

// followMirror runs transparency.Mirror once, or every cfg.interval until ctx
// is done or a run fails, reporting each run that stored events (and, with
// once, the run whatever it did).
func followMirror(ctx context.Context, c *transparency.Client, l *eventlog.Log, dir datadir.Dir, cfg mirrorConfig, once bool, report func(transparency.Mirrored)) error {
	opts := transparency.MirrorOptions{URL: c.Base(), API: cfg.token != "", Evidence: dir.EvidencePrefix()}
	for {
		rep, err := transparency.Mirror(ctx, c, l, opts)
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mirror %s: %w", c.Via(), err)
		}
		if once || rep.Events > 0 {
			report(rep)
		}
		if once {
			return nil
		}
		t := time.NewTimer(max(cfg.interval, 100*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func mirroredLine(k transparency.Key, via string, rep transparency.Mirrored) string {
	if rep.Result == "unchanged" {
		return fmt.Sprintf("unchanged: %s tree size %d, root %s, at %s", k.Origin, rep.Head.Size, transparency.B64(rep.Head.Root), via)
	}
	return fmt.Sprintf("mirrored %s tree size %d, root %s, from %s: %d events stored", k.Origin, rep.Head.Size, transparency.B64(rep.Head.Root), via, rep.Events)
}
