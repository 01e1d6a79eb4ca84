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
	// LookupEnv reads the environment where a variable set to "" differs
	// from one not set (serve's CIVNODE_* variables); nil: Getenv, where
	// empty means unset.
	LookupEnv func(string) (string, bool)
	// Environ lists the environment as NAME=value, for serve to name a
	// CIVNODE_ variable it does not know; nil: it looks for none.
	Environ func() []string
	// HomeDir locates ~ for the default data dir.
	HomeDir func() (string, error)
}

// NewMain returns a Main wired to the process's standard streams and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, LookupEnv: os.LookupEnv, Environ: os.Environ, HomeDir: os.UserHomeDir}
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
	cmd, err := root.ExecuteContextC(ctx)
	var rep *reportedError
	switch {
	case err == nil:
	case errors.As(err, &rep):
	case isUsage(err):
		// The help of the command that was misused, which lists its flags.
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(m.Stderr, "civnode: %v\nRun '%s --help' for usage.\n", err, path)
	default:
		fmt.Fprintf(m.Stderr, "civnode: %v\n", err)
	}
	return err
}

// globals holds the flags every subcommand shares.
type globals struct {
	logLevel  string
	logFormat string
}

func (m *Main) newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "civnode",
		Short: "A local civnode node: control API over a signed, hash-chained event log",
		Long:  rootHelp,
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
		Version:                    readBuildInfo().String(),
	}
	// cobra prints "civnode version X"; the version line already names civnode.
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text (key=value) or json (one object a line)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newServeCommand(m, g),
		newVerifyCommand(m, g),
		newDoctorCommand(m, g),
		newExportCommand(m, g),
		newReplayCommand(m, g),
		newBackupCommand(m, g),
		newRestoreCommand(m, g),
		newImportCommand(m, g),
		newTokenCommand(m, g),
		newWalletCommand(m, g),
		newTransparencyCommand(m, g),
		newStateCommand(m, g),
		newMirrorCommand(m, g),
		newPromoteCommand(m, g),
		newOracleCommand(m, g),
		newVersionCommand(m),
		newBenchCommand(m, g),
		newRegistryDevCommand(m, g),
		newManCommand(m),
	)
	return root
}

// logger returns the logger on stderr at the level --log-level names, in the
// format --log-format names.
func (m *Main) logger(g *globals) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(m.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(m.Stderr, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", g.logFormat)
}
