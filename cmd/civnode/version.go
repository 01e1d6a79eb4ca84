package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/buildinfo"
)

// These are set at link time by a release build, and override what the Go
// toolchain recorded:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD) \
//	  -X main.buildTime=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/civnode
//
// Left empty, the module version and the vcs.revision and vcs.time settings of
// runtime/debug.ReadBuildInfo are used, which a build from a git checkout
// records unless -buildvcs=false.
var version, commit, buildTime string

// readBuildInfo is the binary's build information, the link-time
// overrides above first (buildinfo.Read).
func readBuildInfo() buildinfo.Info { return buildinfo.Read(version, commit, buildTime) }

func newVersionCommand(m *Main) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of civnode",
		Long: `version prints the version, the commit it was built from, the Go version and
the platform; with --json also the build time, as one JSON object:

  {"version":"v1.2.0","commit":"…","go_version":"go1.26.0","build_time":"…","modified":false,"platform":"linux/amd64"}

A release build sets them at link time (-ldflags "-X main.version=… -X
main.commit=… -X main.buildTime=…", see docs/running.md); otherwise they come
from what the Go toolchain recorded: the module version ("dev" for a build from
a work tree) and git's revision and commit time ("unknown" and "" when built
without version control information, e.g. -buildvcs=false).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			if asJSON {
				return json.NewEncoder(m.Stdout).Encode(b)
			}
			_, err := fmt.Fprintln(m.Stdout, b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: version, commit, go_version, build_time, modified, platform")
	return cmd
}
