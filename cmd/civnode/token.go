package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/admin"
	"github.com/civnode/civnode/commands"
)

func newTokenCommand(m *Main, g *globals) *cobra.Command {
	c := &owner{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue, rotate, revoke and list agent and observer tokens",
		Long:  tokenHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.flags(cmd.PersistentFlags())
	cmd.AddCommand(newTokenCreateCommand(c), newTokenRotateCommand(c), newTokenRevokeCommand(c), newTokenListCommand(c))
	return cmd
}

func newTokenCreateCommand(c *owner) *cobra.Command {
	var actsFor string
	var observer bool
	cmd := &cobra.Command{
		Use:   "create (--acts-for PUBLIC_ID | --observer)",
		Short: "Issue a token; prints its secret on stdout",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			kind := commands.TokenKindAgent
			switch {
			case observer && actsFor != "":
				return usageErrorf("give --acts-for or --observer, not both")
			case observer:
				kind = commands.TokenKindObserver
			case actsFor == "":
				return usageErrorf("token create needs --acts-for PUBLIC_ID or --observer")
			}
			return c.with(cmd.Context(), func(ctx context.Context, a *admin.Owner) error {
				issued, err := a.Tokens.Create(ctx, kind, actsFor)
				if err != nil {
					return err
				}
				return printIssued(c.m.Stdout, c.m.Stderr, issued, "created")
			})
		},
	}
	cmd.Flags().StringVar(&actsFor, "acts-for", "", "issue an agent token acting for the identity with this public_id")
	cmd.Flags().BoolVar(&observer, "observer", false, "issue a read-only observer token")
	return cmd
}

func newTokenRotateCommand(c *owner) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate TOKEN_ID",
		Short: "Give a token a new secret; prints it on stdout, the old one stops working",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.with(cmd.Context(), func(ctx context.Context, a *admin.Owner) error {
				issued, err := a.Tokens.Rotate(ctx, args[0])
				if err != nil {
					return err
				}
				return printIssued(c.m.Stdout, c.m.Stderr, issued, "rotated")
			})
		},
	}
}

func newTokenRevokeCommand(c *owner) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Stop a token from working; it stays listed as revoked",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.with(cmd.Context(), func(ctx context.Context, a *admin.Owner) error {
				t, err := a.Tokens.Revoke(ctx, args[0])
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.m.Stderr, "revoked %s token %s\n", t.Kind, t.ID)
				return err
			})
		},
	}
}

func newTokenListCommand(c *owner) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every token, revoked ones included (never their secrets)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.with(cmd.Context(), func(ctx context.Context, a *admin.Owner) error {
				tokens, err := a.Tokens.List(ctx)
				if err != nil {
					return err
				}
				return printTokenTable(c.m.Stdout, tokens)
			})
		},
	}
}

// printIssued prints the secret alone on stdout, so that $(civnode token create …)
// captures exactly the secret, and what it is on stderr.
func printIssued(stdout, stderr io.Writer, t commands.IssuedToken, verb string) error {
	if _, err := fmt.Fprintln(stdout, t.Secret); err != nil {
		return fmt.Errorf("print token: %w", err)
	}
	what := fmt.Sprintf("%s %s token %s", verb, t.Kind, t.ID)
	if t.Kind == commands.ActorAgent {
		what += fmt.Sprintf(" acting for %s (%s)", t.PublicID, t.AgentDID)
	}
	_, err := fmt.Fprintf(stderr, "%s; the secret on stdout is shown only this once\n", what)
	return err
}

// printTokenTable prints tokens as a table; times are UTC, "-" when unset.
func printTokenTable(w io.Writer, tokens []commands.Token) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tPUBLIC_ID\tAGENT_DID\tCREATED\tROTATED\tREVOKED")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Kind, dash(t.PublicID), dash(t.AgentDID),
			tableTime(t.CreatedAt), tableTime(t.RotatedAt), tableTime(t.RevokedAt))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
