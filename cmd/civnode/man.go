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
		Long:  manHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
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
