package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/internal/testtool"
)

// TestSystemdUnitVerifies takes the install steps in the comments of the
// shipped unit, docs/civnode.service, carries out those that install files
// into a temporary root (with this build of civnode), and has systemd-analyze
// verify the unit there: its ExecStart= binary exists and runs, the man page
// its Documentation= names is found, and systemd accepts every setting.
// Adding the user and starting the unit change the machine, so they are
// left out; any other step must be one the test knows.
func TestSystemdUnitVerifies(t *testing.T) {
	needBinary(t)
	for _, tool := range []string{"systemd-analyze", "man"} {
		if _, err := exec.LookPath(tool); err != nil {
			testtool.Missing(t, tool+" is not installed: install the systemd and man-db packages to verify docs/civnode.service")
		}
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(filepath.Join(repo, "docs", "civnode.service"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// Within root, as the systemd of the machine would see it: its units,
	// which the shipped one is ordered after and wanted by.
	units := filepath.Join(root, "usr", "lib", "systemd")
	if err := os.MkdirAll(units, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", units).CombinedOutput(); err != nil {
		t.Fatalf("copy this machine's systemd units: %v\n%s", err, out)
	}
	// inRoot is a path of a step: an absolute one moved into root, the
	// binary this build's, any other relative to the repository.
	inRoot := func(p string) string {
		switch {
		case p == "civnode":
			return civnodeBin
		case filepath.IsAbs(p):
			return filepath.Join(root, p)
		}
		return filepath.Join(repo, p)
	}
	ran := 0
	for _, line := range strings.Split(string(unit), "\n") {
		step, ok := strings.CutPrefix(line, "#   ")
		if !ok {
			continue
		}
		args := strings.Fields(step)
		var cmd *exec.Cmd
		switch {
		case args[0] == "useradd" || args[0] == "systemctl":
			continue
		case args[0] == "install":
			// install [-d] -m MODE PATH...: with -D, the parents of the
			// destination too, since root starts empty.
			out := []string{"-D"}
			for i := 1; i < len(args); i++ {
				switch {
				case args[i] == "-m":
					out = append(out, args[i], args[i+1])
					i++
				case strings.HasPrefix(args[i], "-"):
					out = append(out, args[i])
				default:
					out = append(out, inRoot(args[i]))
				}
			}
			if out[1] == "-d" {
				out = out[1:]
			}
			cmd = exec.Command("install", out...)
		case args[0] == "/usr/local/bin/civnode":
			for i := 1; i < len(args); i++ {
				if filepath.IsAbs(args[i]) {
					args[i] = inRoot(args[i])
				}
			}
			cmd = exec.Command(inRoot(args[0]), args[1:]...)
		default:
			t.Fatalf("docs/civnode.service: install step %q is new to this test; teach it the step", step)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("install step %q: %v\n%s", step, err, out)
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("docs/civnode.service lists no install steps")
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	verify := exec.CommandContext(ctx, "systemd-analyze", "verify", "--root="+root, "civnode.service")
	// man looks for the Documentation= page where the steps put it.
	verify.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr", "local", "share", "man"))
	if out, err := verify.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify civnode.service after the install steps: %v\n%s", err, out)
	}
}
