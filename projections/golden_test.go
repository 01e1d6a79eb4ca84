package projections_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

var update = flag.Bool("update", false, "rewrite testdata/fold.golden (with a new projections.Version when the folds' output changed)")

const foldGolden = "testdata/fold.golden"

// TestFoldGolden folds a fixed chain that holds every event type, accepted
// and refused ones, and compares every record the models keep, and their
// summaries, with testdata/fold.golden, which names the projections.Version it
// was made with. A change of what the folds make of the chain must come with
// a new Version, since a node rebuilds its models only when Version changes:
// without one, nodes would keep the old records beside new ones. So the test
// fails when the output changed and Version did not, and -update refuses to
// write the golden then. (When only this test's own rendering or chain
// changes, delete the golden and run -update: a missing golden is written.)
func TestFoldGolden(t *testing.T) {
	c := goldenChain(t)
	got := foldDump(t, c.log)

	raw, err := os.ReadFile(foldGolden)
	if err != nil && !(os.IsNotExist(err) && *update) {
		t.Fatal(err)
	}
	header, want, _ := strings.Cut(string(raw), "\n")
	version, hasVersion := strings.CutPrefix(header, "projections.Version ")
	if raw != nil && !hasVersion {
		t.Fatalf("%s does not start with its projections.Version", foldGolden)
	}
	changed := raw != nil && want != got
	regenerate := "go test ./projections -run TestFoldGolden -update"
	if changed && version == projections.Version {
		t.Fatalf("what the folds make of the chain changed, but projections.Version is still %q: bump Version "+
			"(projections/fold.go), so that every node rebuilds its models, then regenerate %s with\n\t%s\n%s",
			version, foldGolden, regenerate, firstDifference(want, got))
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(foldGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(foldGolden, []byte("projections.Version "+projections.Version+"\n"+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	switch {
	case changed:
		t.Fatalf("projections.Version is %q and the folds' output changed since %s was made at %q: regenerate it with\n\t%s\n%s",
			projections.Version, foldGolden, version, regenerate, firstDifference(want, got))
	case version != projections.Version:
		t.Fatalf("projections.Version is %q, %s was made at %q: regenerate it with\n\t%s",
			projections.Version, foldGolden, version, regenerate)
	}
}

// foldDump is every model's summary and every key and value it keeps, model
// by model (projections.Models), one line each. A key no model's prefix
// covers fails the test: each key has one owner.
func foldDump(t *testing.T, l *eventlog.Log) string {
	t.Helper()
	v, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var b strings.Builder
	owned := 0
	for _, m := range projections.Models() {
		fmt.Fprintf(&b, "model %s\n", m.Name)
		figures, err := m.Summary(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range figures {
			fmt.Fprintf(&b, "  %s = %v\n", f.Name, f.Value)
		}
		err = v.Scan([]byte(m.Prefix), eventlog.PrefixEnd([]byte(m.Prefix)), false, func(k, val []byte) (bool, error) {
			owned++
			fmt.Fprintf(&b, "  %s %s\n", strconv.QuoteToASCII(string(k)), printable(val))
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every key past the space's own (0x00 version, 0x00 applied) is a model's.
	all := 0
	if err := v.Scan([]byte{1}, nil, false, func(k, _ []byte) (bool, error) {
		all++
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if all != owned {
		t.Errorf("%d keys in the model space, %d of them under a prefix of projections.Models: every key needs its model", all, owned)
	}
	return b.String()
}

// printable is a stored value as it reads best: JSON as it is, anything else
// (a counter's 8 bytes, a day total) quoted.
func printable(v []byte) string {
	if json.Valid(v) && (bytes.HasPrefix(v, []byte("{")) || bytes.HasPrefix(v, []byte("["))) {
		return string(v)
	}
	return strconv.QuoteToASCII(string(v))
}

// firstDifference shows the first line where got differs from want.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("first difference, line %d:\n  golden: %s\n  now:    %s", i+2, wl, gl)
		}
	}
	return ""
}

// goldenChain is a fixed chain, byte for byte the same on every run (a fixed
// key and clock), that takes every model through each of its event types and
// then has each model refuse one event.
func goldenChain(t *testing.T) *chain {
	t.Helper()
	start := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	c := newChain(t, func(o *eventlog.Options) { o.Now = func() time.Time { return start } })

	// Identities: two agents, an update, a binding, profiles.
	c.bootstrap(1, "ada")
	c.bootstrap(2, "bob")
	c.append(events.TypeIdentityUpdated, events.IdentityUpdated{AgentDID: did(1), PublicID: "ada", DisplayName: "Ada",
		ModelProvider: ptr("local"), CapabilitiesGranted: []string{"missions.claim"}, SubnetMemberships: []string{"genesis"}})
	c.append(events.TypeControllerBindingUpdated, events.ControllerBindingUpdated{AgentDID: did(1),
		ControllerKind: "local_model", ControllerRef: "gpu", OwnershipScope: events.ScopeExclusive, Active: true})
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(1), Faction: ptr("order"), Role: ptr("archivist"),
		Strategy: ptr("cautious"), HomeSubnetID: ptr("genesis")})
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(2), Faction: ptr("frontier")})

	// Missions: one through its whole life to bob, one claimed, one open;
	// the game installs them.
	c.lifecycle(1, "genesis", 2)
	c.create(2, "genesis")
	c.append(events.TypeMissionAccepted, events.MissionAccepted{MissionID: missionID(2), IssuerDID: did(0), Claimer: "ada",
		ClaimerDID: did(1), Reward: testReward})
	c.create(3, "rim")
	c.append(events.TypeGameStarterMissionsInstalled, events.StarterMissionsInstalled{CatalogVersion: "1", SubnetID: "genesis",
		TemplateIDs: []string{"a", "b"}, MissionIDs: []string{missionID(1), missionID(2)}, InstalledBy: did(0)})
	c.append(events.TypeGameMissionPackInstalled, events.MissionPackInstalled{CatalogVersion: "1", PackID: "p", SubnetID: "genesis",
		TemplateIDs: []string{"c"}, MissionIDs: []string{missionID(3)}, InstalledBy: did(0)})

	// Peer links: no model folds them.
	c.append(events.TypePeerConnected, events.PeerConnected{Kind: events.PeerKindLeaf, Remote: "nats://hub:7422", Name: ptr("hub")})
	c.append(events.TypePeerDisconnected, events.PeerDisconnected{Kind: events.PeerKindLeaf, Remote: "nats://hub:7422", Name: ptr("hub")})

	// The registry proxy: a paid invocation answered at once, a task that
	// completes and one that fails.
	c.append(events.TypePaymentAuthorized, events.PaymentAuthorized{PaymentID: "pay-1", Rail: events.RailX402, Scheme: "exact",
		X402Version: 1, AgentID: "agent-x", AuthorizedBy: did(1), AccountRef: "main", Payer: "0xpayer", PayTo: "0xpayee",
		Asset: "0xasset", Network: "base-sepolia", Amount: "1000", Nonce: "0x01", ValidAfter: 0, ValidBefore: 1900000000})
	c.append(events.TypeServicenetInvoked, events.ServicenetInvoked{AgentID: "agent-x", InvokedBy: did(1), TokenID: "tok-1",
		RequestSHA256: "aa", Status: "completed", ResultSHA256: ptr("bb"), PaymentID: ptr("pay-1")})
	c.append(events.TypePaymentSettled, events.PaymentReceipt{PaymentID: "pay-1", Rail: events.RailX402, AgentID: "agent-x",
		AccountRef: "main", Payer: "0xpayer", Network: "base-sepolia", Asset: "0xasset", Amount: "1000", Success: true,
		Transaction: "0xtx", Receipt: json.RawMessage(`{"ok":true}`)})
	for i, end := range []string{events.TypeServicenetTaskCompleted, events.TypeServicenetTaskFailed} {
		receipt, task := fmt.Sprintf("rcpt-%d", i), fmt.Sprintf("task-%d", i)
		c.append(events.TypeServicenetInvoked, events.ServicenetInvoked{AgentID: "agent-y", InvokedBy: did(2), TokenID: "tok-2",
			RequestSHA256: "cc", Status: "accepted", ReceiptID: ptr(receipt), TaskID: ptr(task)})
		finished := events.ServicenetTaskFinished{AgentID: "agent-y", TaskID: task, ReceiptID: receipt, ResultSHA256: ptr("dd")}
		if end == events.TypeServicenetTaskFailed {
			finished.ResultSHA256, finished.Error = nil, ptr("upstream failed")
		}
		c.append(end, finished)
	}

	// The oracle: ada publishes two versions, bob subscribes and pays for
	// the first with the credits his mission earned.
	feed := func(version uint64) events.OracleFeedPublished {
		return events.OracleFeedPublished{Feed: "prices.eth-usd", Publisher: "ada", PublisherDID: did(1), Version: version,
			Price: 5, Payload: json.RawMessage(`{"usd":3000}`), Signature: "c2ln"}
	}
	c.append(events.TypeOracleFeedPublished, feed(1))
	c.append(events.TypeOracleSubscribed, events.OracleSubscribed{Feed: "prices.eth-usd", Subscriber: "bob", SubscriberDID: did(2), MaxPrice: 10})
	c.append(events.TypeOracleSettled, events.OracleSettled{Feed: "prices.eth-usd", Version: 1, Subscriber: "bob", SubscriberDID: did(2),
		Publisher: "ada", PublisherDID: did(1), Price: 5})
	c.append(events.TypeOracleFeedPublished, feed(2))

	// A standby promoted in the node's place: no model folds it.
	c.append(events.TypeNodePromoted, events.NodePromoted{Instance: "5f0c2a9e41d7b36c8e21f4a0b9d35c17", TreeSize: c.log.TreeSize()})
	// No model folds a commitment to the state; the state tree checks it
	// (statetree_test.go).
	c.append(events.TypeStateCommitted, events.StateCommitted{ThroughSeq: c.log.Tip().Seq,
		StateRoot: "dDgX7zzPowY776Rbu7kZaVSQpmm1JC3nvx4L9Z0EWwk=", Entries: 2})

	skipped, err := projections.Skipped(c.log)
	if err != nil {
		t.Fatal(err)
	}
	for model, n := range skipped {
		if n != 0 {
			t.Fatalf("the %s model refused %d of the chain's well-formed events: the golden would not show its folds", model, n)
		}
	}
	seen := map[string]bool{}
	if err := c.log.Scan(1, c.log.Tip().Seq, func(ev *eventlog.Event) error {
		seen[ev.Type] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, ty := range events.Types() {
		if !seen[ty.Name] {
			t.Errorf("the golden chain holds no %s", ty.Name)
		}
	}

	// Each model refuses one event, which it counts.
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(9)})                                       // unknown agent
	c.append(events.TypeMissionCompleted, events.MissionCompleted{MissionID: missionID(3), Claimer: "x", Result: "r"}) // not claimed
	c.append(events.TypeGameMissionPackInstalled, events.MissionPackInstalled{CatalogVersion: "1", PackID: "p", SubnetID: "genesis",
		TemplateIDs: []string{"c"}, MissionIDs: []string{missionID(3)}, InstalledBy: did(0)}) // installed already
	c.append(events.TypeServicenetTaskCompleted, events.ServicenetTaskFinished{AgentID: "agent-y", TaskID: "task-0", ReceiptID: "rcpt-0"}) // ended already
	c.append(events.TypeOracleFeedPublished, feed(4))                                                                                      // skips version 3
	return c
}
