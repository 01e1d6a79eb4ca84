package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

// TestReadOverrides: the link-time values win, and the line names them.
func TestReadOverrides(t *testing.T) {
	b := Read("v1.2.3", "0123456789abcdef", "2030-01-02T03:04:05Z")
	if b.Version != "v1.2.3" || b.Commit != "0123456789abcdef" || b.BuildTime != "2030-01-02T03:04:05Z" || b.GoVersion != runtime.Version() {
		t.Fatalf("%+v", b)
	}
	if s := b.String(); !strings.HasPrefix(s, "civnode v1.2.3 (commit 0123456789ab") {
		t.Errorf("line %q", s)
	}
}

// TestReadDefaults: without overrides a test binary is "dev", never empty.
func TestReadDefaults(t *testing.T) {
	b := Read("", "", "")
	if b.Version == "" || b.Commit == "" || b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("%+v", b)
	}
}
