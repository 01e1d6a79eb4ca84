package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/oraclesock"
)

// feedCmd is civnode oracle: the flags its subcommands share, and the way
// to the oracle of the data dir they act on (feeds, subscriptions, pulls and
// the credit balances they move).
type feedCmd struct {
	m       *Main
	g       *globals
	dataDir string
	json    bool
}

// maxPayloadRead bounds what --payload reads from a file or stdin; the
// commands refuse a payload over 64 KiB with their own message.
const maxPayloadRead = 512 << 10

func newOracleCommand(m *Main, g *globals) *cobra.Command {
	c := &feedCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "oracle",
		Short: "Publish signed data feeds, subscribe to them and pull them for credits",
		Long:  oracleHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	f := cmd.PersistentFlags()
	f.StringVar(&c.dataDir, "data-dir", "", datadir.Help)
	f.BoolVar(&c.json, "json", false, "print one JSON object (docs/oracle.md) instead of text")
	cmd.AddCommand(
		newOraclePublishCommand(c),
		newOracleSubscribeCommand(c),
		newOraclePullCommand(c),
		newOracleBalanceCommand(c),
		newOracleFeedsCommand(c),
	)
	return cmd
}

// feedVersionFlags are the flags that describe a version to publish or sign.
type feedVersionFlags struct {
	as, payload string
	price       int64
}

func (fl *feedVersionFlags) add(cmd *cobra.Command, verb string) {
	cmd.Flags().StringVar(&fl.as, "as", "", "the public_id of the identity that "+verb+" (required)")
	cmd.Flags().StringVar(&fl.payload, "payload", "", "the feed's data: a JSON value, @FILE to read it from a file, or - for stdin (required)")
	cmd.Flags().Int64Var(&fl.price, "price", 0, "what a subscriber pays, in credits, to pull this version (required)")
}

// check requires the flags and reads the payload.
func (fl *feedVersionFlags) check(stdin io.Reader, cmd *cobra.Command) (json.RawMessage, error) {
	name := cmd.Name()
	switch {
	case fl.as == "":
		return nil, usageErrorf("%s needs --as PUBLIC_ID, the identity that publishes", name)
	case !cmd.Flags().Changed("payload"):
		return nil, usageErrorf("%s needs --payload JSON (or @FILE, or - for stdin)", name)
	case !cmd.Flags().Changed("price"):
		return nil, usageErrorf("%s needs --price N, in credits", name)
	}
	return readPayload(stdin, fl.payload)
}

// readPayload resolves --payload: the JSON itself, @FILE or - (stdin). The
// commands check that it is JSON.
func readPayload(stdin io.Reader, v string) (json.RawMessage, error) {
	var r io.Reader
	switch {
	case v == "-":
		r = stdin
	case strings.HasPrefix(v, "@"):
		f, err := os.Open(v[1:])
		if err != nil {
			return nil, fmt.Errorf("read --payload: %w", err)
		}
		defer f.Close()
		r = f
	default:
		return json.RawMessage(v), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPayloadRead+1))
	if err != nil {
		return nil, fmt.Errorf("read --payload: %w", err)
	}
	if len(b) > maxPayloadRead {
		return nil, fmt.Errorf("read --payload: over %d bytes; a feed's payload is at most 64 KiB", maxPayloadRead)
	}
	return b, nil
}

func newOraclePublishCommand(c *feedCmd) *cobra.Command {
	var fl feedVersionFlags
	cmd := &cobra.Command{
		Use:   "publish FEED --as PUBLIC_ID --payload JSON --price N",
		Short: "Publish the next version of a feed, signed by the publishing identity",
		Long:  oraclePublishHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			payload, err := fl.check(c.m.Stdin, cmd)
			if err != nil {
				return err
			}
			in := commands.PublishFeedInput{As: fl.as, Feed: args[0], Payload: payload, Price: &fl.price}
			return act(c, cmd, func(ctx context.Context, svc oraclesock.Service) (commands.FeedVersion, error) {
				if err := oraclesock.CheckPayload(payload); err != nil {
					return commands.FeedVersion{}, err
				}
				return svc.Publish(ctx, in)
			}, func(v commands.FeedVersion) error {
				_, err := fmt.Fprintf(c.m.Stdout, "published %s version %d as %s, price %d credits, signed by %s\nevent %s at %s\n",
					v.Feed, v.Version, v.Publisher, v.Price, v.PublisherDID, v.EventID, v.PublishedAt)
				return err
			})
		},
	}
	fl.add(cmd, "publishes")
	return cmd
}

func newOracleSubscribeCommand(c *feedCmd) *cobra.Command {
	var as string
	var maxPrice int64
	cmd := &cobra.Command{
		Use:   "subscribe FEED --as PUBLIC_ID --max-price N",
		Short: "Subscribe an identity to a feed, paying at most N credits a version",
		Long:  oracleSubscribeHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case as == "":
				return usageErrorf("subscribe needs --as PUBLIC_ID, the identity that subscribes")
			case !cmd.Flags().Changed("max-price"):
				return usageErrorf("subscribe needs --max-price N, the most it pays for one version, in credits")
			}
			in := commands.SubscribeInput{As: as, Feed: args[0], MaxPrice: &maxPrice}
			return act(c, cmd, func(ctx context.Context, svc oraclesock.Service) (commands.Subscription, error) {
				return svc.Subscribe(ctx, in)
			}, func(v commands.Subscription) error {
				_, err := fmt.Fprintf(c.m.Stdout, "subscribed %s to %s, max price %d credits a version\nevent %s at %s\n",
					v.Subscriber, v.Feed, v.MaxPrice, v.EventID, v.SubscribedAt)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the public_id of the identity that subscribes (required)")
	cmd.Flags().Int64Var(&maxPrice, "max-price", 0, "the most it pays for one version, in credits (required)")
	return cmd
}

func newOraclePullCommand(c *feedCmd) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "pull FEED --as PUBLIC_ID",
		Short: "Pull a feed's newest version, paying its price the first time",
		Long:  oraclePullHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if as == "" {
				return usageErrorf("pull needs --as PUBLIC_ID, the subscribed identity")
			}
			in := commands.PullInput{As: as, Feed: args[0]}
			return act(c, cmd, func(ctx context.Context, svc oraclesock.Service) (commands.Pulled, error) {
				return svc.Pull(ctx, in)
			}, func(v commands.Pulled) error {
				paid := fmt.Sprintf("charged %d credits", v.Charged)
				if v.Charged == 0 && v.SettledEventID == "" {
					paid = "already paid for, charged nothing"
				}
				fmt.Fprintf(c.m.Stderr, "%s version %d by %s, signature verified; %s; %s has %d credits\n",
					v.Feed.Feed, v.Feed.Version, v.Feed.Publisher, paid, as, v.Balance)
				_, err := fmt.Fprintf(c.m.Stdout, "%s\n", v.Feed.Payload)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the public_id of the subscribed identity (required)")
	return cmd
}

func newOracleBalanceCommand(c *feedCmd) *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "balance [--agent PUBLIC_ID]",
		Short: "Show the credit balance of every identity, or of one",
		Long:  oracleBalanceHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("agent") && agent == "" {
				return usageErrorf("--agent needs a PUBLIC_ID")
			}
			return act(c, cmd, func(ctx context.Context, svc oraclesock.Service) (any, error) {
				bs, err := svc.Balances(ctx, agent)
				if err != nil || agent == "" {
					return oraclesock.BalanceList{Balances: bs}, err
				}
				if len(bs) != 1 {
					return nil, fmt.Errorf("balance of %s: %d answers", agent, len(bs))
				}
				return bs[0], nil
			}, func(v any) error {
				bs := []oraclesock.Balance{}
				switch v := v.(type) {
				case oraclesock.BalanceList:
					bs = v.Balances
				case oraclesock.Balance:
					bs = append(bs, v)
				}
				tw := tabwriter.NewWriter(c.m.Stdout, 0, 8, 2, ' ', 0)
				fmt.Fprintln(tw, "PUBLIC_ID\tCREDIT\tAGENT_DID")
				for _, b := range bs {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", b.PublicID, b.Credit, b.AgentDID)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only the identity with this public_id")
	return cmd
}

func newOracleFeedsCommand(c *feedCmd) *cobra.Command {
	return &cobra.Command{
		Use:   "feeds",
		Short: "List every feed: its publisher, newest version, price, subscribers and earnings",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return act(c, cmd, func(ctx context.Context, svc oraclesock.Service) (oraclesock.FeedList, error) {
				fs, err := svc.Feeds(ctx)
				return oraclesock.FeedList{Feeds: fs}, err
			}, func(v oraclesock.FeedList) error {
				tw := tabwriter.NewWriter(c.m.Stdout, 0, 8, 2, ' ', 0)
				fmt.Fprintln(tw, "FEED\tPUBLISHER\tVERSION\tPRICE\tSUBSCRIBERS\tPULLS\tEARNED\tPUBLISHED_AT")
				for _, f := range v.Feeds {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n",
						f.Feed, f.Publisher, f.Version, f.Price, f.Subscribers, f.Pulls, f.Earned, f.PublishedAt)
				}
				return tw.Flush()
			})
		},
	}
}

// act runs do on the oracle of c's data dir and prints its result: as one
// JSON object with --json, else with human. (A function, not a method of
// feedCmd: Go methods take no type parameters.)
func act[T any](c *feedCmd, cmd *cobra.Command, do func(context.Context, oraclesock.Service) (T, error), human func(T) error) error {
	err := c.with(cmd.Context(), func(ctx context.Context, svc oraclesock.Service) error {
		v, err := do(ctx, svc)
		if err != nil {
			return err
		}
		if c.json {
			return printJSONLine(c.m.Stdout, v)
		}
		return human(v)
	})
	if err != nil && c.json && !isUsage(err) {
		e := failureOf(err)
		if perr := printJSONLine(c.m.Stdout, oraclesock.Response{Error: &e}); perr != nil {
			return errors.Join(err, perr)
		}
	}
	return err
}

// failureOf is what --json prints for a failed command: the node's
// answer, or for the CLI's own failures kind and code failed (data_dir_in_use
// when a node holds the data dir but its oracle socket cannot be reached).
func failureOf(err error) oraclesock.Failure {
	var ne *oraclesock.NodeError
	if errors.As(err, &ne) {
		return ne.Failure
	}
	var ce *commands.Error
	if errors.As(err, &ce) {
		if e, _ := oraclesock.ErrorOf(ce); e.Kind != "internal" {
			return e
		}
	}
	if errors.Is(err, datadir.ErrInUse) {
		return oraclesock.Failure{Kind: "unavailable", Code: "data_dir_in_use", Message: err.Error()}
	}
	return oraclesock.Failure{Kind: "failed", Code: "failed", Message: err.Error()}
}

func printJSONLine(w io.Writer, v any) error {
	b, err := oraclesock.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("print output: %w", err)
	}
	return nil
}

// with runs do on the oracle of the data dir (localnode.OpenOracle).
func (c *feedCmd) with(ctx context.Context, do func(context.Context, oraclesock.Service) error) (err error) {
	logger, err := c.m.logger(c.g)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(c.dataDir, c.m.Getenv, c.m.HomeDir)
	if err != nil {
		return err
	}
	svc, closeSvc, err := localnode.OpenOracle(ctx, dir, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeSvc(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return do(ctx, svc)
}
