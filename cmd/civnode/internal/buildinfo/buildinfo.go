package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is what civnode version --json prints, and the labels of the
// civnode_build_info metric.
type Info struct {
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

// Read gathers the binary's build information: version, commit and
// buildTime are the link-time overrides (-ldflags -X), which win where not
// empty. A value no source knows is "unknown" ("dev" for the version),
// except the build time, which is left empty.
func Read(version, commit, buildTime string) Info {
	b := Info{Version: "dev", Commit: "unknown", GoVersion: runtime.Version(),
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
func (b Info) String() string {
	c := b.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if b.Modified {
		c += "+dirty"
	}
	return fmt.Sprintf("civnode %s (commit %s, %s %s)", b.Version, c, b.GoVersion, b.Platform)
}
