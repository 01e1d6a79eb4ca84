package doctor

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// mirrorDir makes a mirror's data dir of a new node's chain of n events:
// db/ of the origin's events, ingested, and origin.vkey; it returns the dir
// and the origin's log.
func mirrorDir(t *testing.T, seed byte, n int) (datadir.Dir, *eventlog.Log) {
	t.Helper()
	s := make([]byte, 32)
	s[0] = seed
	origin, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(t.TempDir(), "db"), Key: ed25519.NewKeyFromSeed(s)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { origin.Close() })
	for i := range n - 1 {
		if _, err := origin.Append(context.Background(), eventlog.Draft{Type: "test.seq", Payload: map[string]int{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := datadir.Dir(t.TempDir())
	if err := os.Chmod(string(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	m, err := dir.OpenMirrorLog(origin.PublicKey(), slog.New(slog.DiscardHandler), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*eventlog.Event
	if err := origin.Scan(1, origin.Tip().Seq, func(ev *eventlog.Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Ingest(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dir.PinOriginKey(origin.VerifierKey()); err != nil {
		t.Fatal(err)
	}
	return dir, origin
}

// runMirrorDoctor runs doctor on dir, which no process holds, and returns
// each check's status and detail by name.
func runMirrorDoctor(t *testing.T, dir datadir.Dir) (map[string]Check, Report) {
	t.Helper()
	refuse := func(context.Context, net.Conn, string, ed25519.PublicKey, string) (Node, error) {
		t.Error("Prove called on a mirror")
		return nil, net.ErrClosed
	}
	rep, err := Run(context.Background(), dir, Options{Addr: "127.0.0.1:0", RegistryURL: "", Prove: refuse})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]Check{}
	for _, c := range rep.Checks {
		checks[c.Name] = c
	}
	return checks, rep
}

// TestDoctorMirror: a stopped mirror's data dir has an origin_key line in
// place of node_key, and its chain is checked with the origin's key; an
// origin.vkey others may write, one that is not a verifier key, or one of
// another node than the chain's, fails, naming the file.
func TestDoctorMirror(t *testing.T) {
	dir, origin := mirrorDir(t, 1, 20)
	checks, rep := runMirrorDoctor(t, dir)
	if _, ok := checks["node_key"]; ok || rep.Failed != 0 {
		t.Fatalf("a mirror's report: %+v", rep)
	}
	for name, st := range map[string]string{"origin_key": statusOK, "control_token": statusOK, "chain": statusOK, "node": statusOK, "registry": statusOK} {
		if checks[name].Status != st {
			t.Errorf("%s: %+v, want %s", name, checks[name], st)
		}
	}
	if d := checks["origin_key"].Detail; !strings.Contains(d, origin.NodeDID()) {
		t.Errorf("origin_key does not name the origin: %s", d)
	}

	vkey := dir.OriginKeyPath()
	if err := os.Chmod(vkey, 0o666); err != nil {
		t.Fatal(err)
	}
	checks, _ = runMirrorDoctor(t, dir)
	if c := checks["origin_key"]; c.Status != statusFail || !strings.Contains(c.Detail, "may replace") || checks["chain"].Status != statusSkip {
		t.Errorf("a writable origin.vkey: %+v, chain %+v", c, checks["chain"])
	}
	if err := os.Chmod(vkey, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vkey, []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checks, _ = runMirrorDoctor(t, dir)
	if c := checks["origin_key"]; c.Status != statusFail || !strings.Contains(c.Detail, vkey) {
		t.Errorf("a malformed origin.vkey: %+v", c)
	}
	_, other := mirrorDir(t, 2, 2)
	if err := os.WriteFile(vkey, []byte(other.VerifierKey()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checks, _ = runMirrorDoctor(t, dir)
	if c := checks["chain"]; c.Status != statusFail || !strings.Contains(c.Detail, "but origin.vkey pins the origin "+other.NodeDID()) {
		t.Errorf("origin.vkey of another node: %+v", c)
	}
}
