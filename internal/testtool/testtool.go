package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// Missing ends t because something it needs is not on this machine: a skip,
// or under CI (CI=true) a failure. why says what is missing and what to
// install.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Need returns the path of program on PATH; without it, it calls Missing
// with install, which says what to install to run the test.
func Need(t testing.TB, program, install string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		Missing(t, program+" is not on PATH: "+install)
	}
	return path
}
