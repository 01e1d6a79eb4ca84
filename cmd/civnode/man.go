package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newManCommand(m *Main) *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write the man pages of every command into DIR",
		Long: `man writes one man page (section 1) for civnode and each of its subcommands
into DIR, generated from the same command tree and help texts as --help:
civnode.1, civnode-serve.1, civnode-token-create.1, and so on. DIR is created
if it does not exist. To read them without installing:

  civnode man /tmp/civnode-man && man /tmp/civnode-man/civnode-serve.1

A package installs them under /usr/share/man/man1.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create man dir: %w", err)
			}
			root := cmd.Root()
			// The pages carry no generation date, so that the same binary
			// writes the same bytes.
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "CIVNODE", Section: "1", Source: "civnode " + readBuildInfo().Version, Manual: "civnode manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("write man pages: %w", err)
			}
			_, err := fmt.Fprintf(m.Stdout, "man pages written to %s\n", dir)
			return err
		},
	}
}
