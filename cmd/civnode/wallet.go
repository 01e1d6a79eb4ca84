package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/admin"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands"
)

type walletAdmin = admin.Wallets

func (m *Main) newWalletCommand(g *globals) *cobra.Command {
	var cfg tokenConfig
	cmd := &cobra.Command{
		Use:   "wallet",
		Short: "Create and list the payment accounts the registry proxy pays x402 invoices from",
		Long: `wallet manages the node's payment accounts (docs/servicenet.md). Each is a local
EVM (secp256k1) key, kept in <data-dir>/wallets/REF.key with mode 0600, and
named by REF: an invoke's settlement.request.payment_account_ref. Amounts and
limits are in the asset's atomic units (USDC has 6 decimals: 1 USDC is 1000000).
A limit left out is no limit.

Like token, wallet works on a stopped node's data dir, or through the admin
endpoints of the node running on it (control.sock, else --addr once the node has
proved it holds the data dir's key). No command ever prints a key.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	f := cmd.PersistentFlags()
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "address HOST:PORT of the node running on --data-dir, used when its control.sock cannot be reached")
	cmd.AddCommand(m.newWalletCreateCommand(g, &cfg), m.newWalletListCommand(g, &cfg))
	return cmd
}

func (m *Main) newWalletCreateCommand(g *globals, cfg *tokenConfig) *cobra.Command {
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
			return m.withWalletAdmin(cmd.Context(), g, cfg, func(ctx context.Context, admin walletAdmin) error {
				acct, err := admin.Create(ctx, in)
				if err != nil {
					return err
				}
				return m.printCreatedAccount(acct)
			})
		},
	}
	cmd.Flags().StringVar(&perPayment, "max-per-payment", "", "refuse any single payment above `N` atomic units (default: no limit)")
	cmd.Flags().StringVar(&perDay, "max-per-day", "", "refuse payments that take the UTC day's total above `N` atomic units (default: no limit)")
	return cmd
}

func (m *Main) newWalletListCommand(g *globals, cfg *tokenConfig) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List payment accounts: refs, addresses and limits, never keys",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.withWalletAdmin(cmd.Context(), g, cfg, func(ctx context.Context, admin walletAdmin) error {
				accts, err := admin.List(ctx)
				if err != nil {
					return err
				}
				return printAccountTable(m.Stdout, accts)
			})
		},
	}
}

// withWalletAdmin runs do against the running node of the data dir if there
// is one, else against the data dir itself.
func (m *Main) withWalletAdmin(ctx context.Context, g *globals, cfg *tokenConfig, do func(context.Context, walletAdmin) error) error {
	return m.withNodeAdmin(ctx, g, cfg, func(o *admin.Owner) error { return do(ctx, o.Wallets) })
}

// printCreatedAccount prints the address alone on stdout, so that
// $(civnode wallet create …) captures it, and the rest on stderr, with a
// warning for each limit left out.
func (m *Main) printCreatedAccount(a commands.PaymentAccount) error {
	if _, err := fmt.Fprintln(m.Stdout, a.Address); err != nil {
		return fmt.Errorf("print address: %w", err)
	}
	fmt.Fprintf(m.Stderr, "created payment account %s (%s); fund this address with the asset agents charge in\n", a.Ref, a.Address)
	for _, l := range []struct {
		name string
		v    *big.Int
	}{{"max-per-payment", a.MaxPerPayment}, {"max-per-day", a.MaxPerDay}} {
		if l.v == nil {
			fmt.Fprintf(m.Stderr, "warning: no --%s limit: the node pays any amount the registry asks within the other limit\n", l.name)
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
