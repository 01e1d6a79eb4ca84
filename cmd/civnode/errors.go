package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
)

// usageError is a mistake on the command line; it exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// isUsage says whether err is a mistake on the command line: a usageError,
// or an --addr the node channel could not use.
func isUsage(err error) bool {
	var u usageError
	var a *localnode.AddrError
	return errors.As(err, &u) || errors.As(err, &a)
}

// usageArgs makes a cobra argument check report a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// reportedError is a failure the command has already told the user about, such
// as the "invalid:" line of verify; Run does not print it again.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// ExitCode maps Run's result to the process's exit status: 0 for success, 2 for a
// usage error, 1 for every other failure.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case isUsage(err):
		return 2
	default:
		return 1
	}
}
