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
		Long:  versionHelp,
		Args:  usageArgs(cobra.NoArgs),
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
