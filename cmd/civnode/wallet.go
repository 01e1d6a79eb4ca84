package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/admin"
	"github.com/civnode/civnode/commands"
)

func newWalletCommand(m *Main, g *globals) *cobra.Command {
	c := &owner{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "wallet",
		Short: "Create and list the payment accounts the registry proxy pays x402 invoices from",
		Long:  walletHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.flags(cmd.PersistentFlags())
	cmd.AddCommand(newWalletCreateCommand(c), newWalletListCommand(c))
	return cmd
}

func newWalletCreateCommand(c *owner) *cobra.Command {
	var perPayment, perDay string
	cmd := &cobra.Command{
		Use:   "create REF [--max-per-payment N] [--max-per-day N]",
		Short: "Create a payment account; prints its address on stdout",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := args[0]
			in := commands.CreatePaymentAccountInput{Ref: &ref}
			for _, l := range []struct {
				flag string
				val  string
				dst  **string
			}{{"max-per-payment", perPayment, &in.MaxPerPayment}, {"max-per-day", perDay, &in.MaxPerDay}} {
				if !cmd.Flags().Changed(l.flag) {
					continue
				}
				if _, err := commands.ParseLimit("--"+l.flag, l.val); err != nil {
					return usageErrorf("--%s must be a decimal integer in the asset's atomic units", l.flag)
				}
				v := l.val
				*l.dst = &v
			}
			return c.with(cmd.Context(), func(ctx context.Context, a *admin.Owner) error {
				acct, err := a.Wallets.Create(ctx, in)
				if err != nil {
					return err
				}
				return printCreatedAccount(c.m.Stdout, c.m.Stderr, acct)
			})
		},
	}
	cmd.Flags().StringVar(&perPayment, "max-per-payment", "", "refuse any single payment above `N` atomic units (default: no limit)")
	cmd.Flags().StringVar(&perDay, "max-per-day", "", "refuse payments that take the UTC day's total above `N` atomic units (default: no limit)")
	return cmd
}

func newWalletListCommand(c *owner) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List payment accounts: refs, addresses and limits, never keys",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.with(cmd.Context(), func(ctx context.Context, a *admin.Owner) error {
				accts, err := a.Wallets.List(ctx)
				if err != nil {
					return err
				}
				return printAccountTable(c.m.Stdout, accts)
			})
		},
	}
}

// printCreatedAccount prints the address alone on stdout, so that
// $(civnode wallet create …) captures it, and the rest on stderr, with a
// warning for each limit left out.
func printCreatedAccount(stdout, stderr io.Writer, a commands.PaymentAccount) error {
	if _, err := fmt.Fprintln(stdout, a.Address); err != nil {
		return fmt.Errorf("print address: %w", err)
	}
	fmt.Fprintf(stderr, "created payment account %s (%s); fund this address with the asset agents charge in\n", a.Ref, a.Address)
	for _, l := range []struct {
		name string
		v    *big.Int
	}{{"max-per-payment", a.MaxPerPayment}, {"max-per-day", a.MaxPerDay}} {
		if l.v == nil {
			fmt.Fprintf(stderr, "warning: no --%s limit: the node pays any amount the registry asks within the other limit\n", l.name)
		}
	}
	return nil
}

// printAccountTable prints accounts as a table; "-" is no limit.
func printAccountTable(w io.Writer, accts []commands.PaymentAccount) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tADDRESS\tMAX_PER_PAYMENT\tMAX_PER_DAY\tCREATED")
	for _, a := range accts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Ref, a.Address, limitCell(a.MaxPerPayment), limitCell(a.MaxPerDay), tableTime(a.CreatedAt))
	}
	return tw.Flush()
}

func limitCell(n *big.Int) string {
	if n == nil {
		return "-"
	}
	return n.String()
}
