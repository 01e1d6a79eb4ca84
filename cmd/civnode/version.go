package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
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

// buildInfo is what civnode version --json prints, and the labels of the
// civnode_build_info metric.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	// BuildTime is the commit's time as git recorded it (vcs.time) unless the
	// link-time override gives the build's own; "" when neither is known.
	BuildTime string `json:"build_time"`
	// Modified says the work tree had uncommitted changes (vcs.modified).
	Modified bool   `json:"modified"`
	Platform string `json:"platform"`
}

// readBuildInfo gathers the binary's build information, the link-time
// overrides first. A value no source knows is "unknown" ("dev" for the
// version), except the build time, which is left empty.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "dev", Commit: "unknown", GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.BuildTime = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		b.Version = version
	}
	if commit != "" {
		b.Commit = commit
	}
	if buildTime != "" {
		b.BuildTime = buildTime
	}
	return b
}

// String is the one line of civnode --version and civnode version.
func (b buildInfo) String() string {
	c := b.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if b.Modified {
		c += "+dirty"
	}
	return fmt.Sprintf("civnode %s (commit %s, %s %s)", b.Version, c, b.GoVersion, b.Platform)
}

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

// buildVersion is the version the node reports (node.started, its log).
func buildVersion() string { return readBuildInfo().Version }
