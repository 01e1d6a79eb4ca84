package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// Main is the civnode program with its surroundings made explicit, so that the
// end-to-end tests run exactly what the binary runs.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (CIVNODE_DATA_DIR).
	Getenv func(string) string
	// HomeDir locates ~ for the default data dir.
	HomeDir func() (string, error)
}

// NewMain returns a Main wired to the process's standard streams and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, HomeDir: os.UserHomeDir}
}

// Run parses args (without the program name) and runs one subcommand until it
// finishes or ctx is done. Errors are reported on Stderr before Run returns them;
// ExitCode maps the result to the process's exit status.
func (m *Main) Run(ctx context.Context, args []string) error {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root := m.newRootCommand()
	root.SetArgs(args)
	root.SetIn(m.Stdin)
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	err := root.ExecuteContext(ctx)
	var rep *reportedError
	switch {
	case err == nil:
	case errors.As(err, &rep):
	case isUsage(err):
		fmt.Fprintf(m.Stderr, "civnode: %v\nRun 'civnode --help' for usage.\n", err)
	default:
		fmt.Fprintf(m.Stderr, "civnode: %v\n", err)
	}
	return err
}

// globals holds the flags every subcommand shares.
type globals struct {
	logLevel string
}

func (m *Main) newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "civnode",
		Short: "A local civnode node: control API over a signed, hash-chained event log",
		Long: `civnode runs a node's control plane: an HTTP/JSON API over an event-sourced
core whose system of record is a signed, hash-chained event log. The other
subcommands verify, export and replay that chain.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			err := usageErrorf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				err = usageErrorf("unknown command %q; did you mean %q?", args[0], s[0])
			}
			return err
		},
		PersistentPreRunE: func(*cobra.Command, []string) error {
			_, err := m.logger(g) // reject a bad --log-level whatever the command
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		SilenceUsage:               true,
		CompletionOptions:          cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		m.newServeCommand(g),
		m.newVerifyCommand(g),
		m.newDoctorCommand(g),
		m.newExportCommand(g),
		m.newReplayCommand(g),
		m.newBackupCommand(g),
		m.newRestoreCommand(g),
		m.newImportCommand(g),
		m.newTokenCommand(g),
		m.newWalletCommand(g),
		m.newTransparencyCommand(g),
		m.newMirrorCommand(g),
		m.newOracleCommand(g),
		m.newVersionCommand(),
		m.newBenchCommand(g),
		m.newRegistryDevCommand(g),
	)
	return root
}

// logger returns the text logger on stderr at the level --log-level names.
func (m *Main) logger(g *globals) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	return slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: level})), nil
}
