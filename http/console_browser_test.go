package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/stream"
)

// consoleE2EDir holds the browser test's scripts and their pinned
// playwright-core (npm ci --prefix http/testdata/console-e2e).
var consoleE2EDir = filepath.Join("testdata", "console-e2e")

// chromiumPath is Debian's chromium (apt-get install chromium), which the
// browser test drives; playwright-core brings no browser of its own.
const chromiumPath = "/usr/bin/chromium"

// needNode returns the node binary, or skips (fails in CI) without one.
func needNode(t *testing.T) string {
	t.Helper()
	return testtool.Need(t, "node", "install Node.js 20 or later")
}

// runNode runs a script of consoleE2EDir with env added, and returns its
// standard output; standard error is logged.
func runNode(t *testing.T, node, script string, timeout time.Duration, env ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = consoleE2EDir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("node %s took %v; its log:\n%s", script, time.Since(start).Round(time.Millisecond), stderr.Bytes())
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s", script, err, stdout.Bytes())
	}
	return stdout.Bytes()
}

// TestConsoleChainChecker runs the console's chain checker (console/chain.js,
// the module the browser runs) under node against this node's events and
// tampered copies of them: gaps, repeats, rewritten links, forged payloads
// with and without a recomputed id, a tip other than the one reported. It
// needs node only, not the browser.
func TestConsoleChainChecker(t *testing.T) {
	node := needNode(t)
	n := newCivNode(t)
	// Characters that JSON encoders escape differently, so that the browser's
	// RFC 8785 is held to the node's on real bytes.
	did, _ := n.bootstrap(map[string]any{"display_name": `Ada "<&>" é 🚀`, "public_id": "ada", "faction": "order", "role": "archivist"})
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
		"controller_kind": "local_model", "controller_ref": "ctl-ada"}).wantOK(t, nil)
	n.bootstrap(map[string]any{"display_name": "Grace Hopper"})
	for _, title := range []string{"Chart the reef at dawn", "Escort the <convoy> & the ‘barges’"} {
		body := missionBody(map[string]any{"title": title, "publisher": "genesis", "publisher_kind": "planetary_government",
			"description": "Line one,\nline two\t(tabbed) and \u00ff\u00e9.", "required_role": "archivist",
			"payload": map[string]any{"big": 1e21, "small": 1.5e-7, "third": 1.0 / 3, "s": "\u2029</script>"}})
		n.civSend(http.MethodPost, "/v1/core/missions", testToken, body).wantOK(t, nil)
	}
	events := n.get("/v1/events?limit=1000")
	if events.status != http.StatusOK {
		t.Fatalf("GET /v1/events: %d %s", events.status, events.body)
	}
	file := filepath.Join(t.TempDir(), "events.json")
	if err := os.WriteFile(file, events.body, 0o600); err != nil {
		t.Fatal(err)
	}
	out := runNode(t, node, "chain-check.mjs", time.Minute, "CIVNODE_EVENTS="+file)
	var summary struct {
		Cases []string `json:"cases"`
	}
	if err := json.Unmarshal(out, &summary); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	if len(summary.Cases) < 14 {
		t.Errorf("only %d cases ran: %v", len(summary.Cases), summary.Cases)
	}
}

// consoleNode is a node wired as civnode serve wires it, on a real loopback
// listener: core.Open with the embedded NATS server as the log's OnCommit,
// the stream, the game and a registry proxy in front of a fake registry.
type consoleNode struct {
	*civNode
	tokens map[string]string
}

func newConsoleNode(t *testing.T) *consoleNode {
	t.Helper()
	return newConsoleNodeWith(t, true)
}

// newConsoleNodeWith is newConsoleNode, without a registry (as serve
// --registry-url "" runs) when withRegistry is false.
func newConsoleNodeWith(t *testing.T, withRegistry bool) *consoleNode {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	did := eventlog.DIDKey(key.Public().(ed25519.PublicKey))
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node log:\n%s", logs.String())
		}
	})

	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/agents" {
			registryAnswer(w, http.StatusNotFound, map[string]any{"error": "no such path"})
			return
		}
		registryAnswer(w, http.StatusOK, map[string]any{"agents": []map[string]any{
			{"agent_id": "cartographer", "name": "Cartographer", "description": "Draws subnet maps from survey results.", "requires_payment": false, "requires_oauth": false},
			{"agent_id": "ledger-audit", "name": "Ledger auditor", "description": "Reconciles settlement ledgers against the chain.", "requires_payment": true, "requires_oauth": false},
			{"agent_id": "relay-watch", "name": "Relay watch", "description": "Monitors relay links and reports outages.", "requires_payment": false, "requires_oauth": true},
		}})
	}))
	t.Cleanup(reg.Close)
	client, err := servicenet.New(servicenet.Config{BaseURL: reg.URL, NodeDID: did,
		Sign: func(msg []byte) []byte { return ed25519.Sign(key, msg) }, Retries: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}

	// The stream before the log, whose commits it publishes; cleanups run
	// last first: the server stops, then the stream, then the log.
	st, err := stream.Start(stream.Options{NodeDID: did, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Governs: []string{"genesis"}, Keys: servicenet.NewKeystore(t.TempDir()), Registry: client}
	if !withRegistry {
		cfg.Registry = nil
	}
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: logger, OnCommit: st.Publish}, cfg)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Cleanup(func() { st.Close() })
	s := New(wired(Options{OwnerToken: testToken, Logger: logger, Governs: []string{"genesis"}, Stream: st}, c))
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	n := &civNode{core: c, key: key, read: c.Identities, mread: c.Missions, gread: c.GameState,
		cmd: c.Identity, mcmd: c.Mission, gcmd: c.Game, tokens: c.Tokens,
		testNode: &testNode{t: t, log: c.Log, srv: s, url: "http://" + ln.Addr().String()}}
	return &consoleNode{civNode: n, tokens: map[string]string{}}
}

// populate gives the console something real to show: identities of every
// faction and role, the starter missions, and missions of three subnets in
// every state, settled ones paying agents and treasuries. The steps are a
// little apart, so that the chart of states over time has a shape.
func (n *consoleNode) populate() {
	t := n.t
	t.Helper()
	for _, p := range []struct {
		name, slug, faction, role, kind string
	}{
		{"Ada Lovelace", "ada", "order", "archivist", "local_model"},
		{"Grace Hopper", "grace", "frontier", "operator", "remote_orchestrator"},
		{"Linus Pauling", "linus", "freeport", "broker", "local_model"},
		{"Mary Somerville", "mary", "order", "enforcer", "human_operator"},
		{"Dockside Guild", "dockside", "freeport", "broker", "remote_orchestrator"},
		{"Emmy Noether", "emmy", "frontier", "archivist", ""},
	} {
		did, _ := n.bootstrap(map[string]any{"display_name": p.name, "public_id": p.slug, "faction": p.faction, "role": p.role})
		if p.kind != "" {
			n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
				"controller_kind": p.kind, "controller_ref": "ctl-" + p.slug}).wantOK(t, nil)
		}
	}
	n.civPost("/v1/game/starter-missions/bootstrap", map[string]any{}).wantOK(t, nil)

	pause := func() { time.Sleep(120 * time.Millisecond) }
	for _, m := range []struct {
		title, publisher, subnet, domain, role, claimer, upTo string
		credit, share                                         int
	}{
		{"Escort the ore convoy", "dockside", "eastport", "security", "enforcer", "mary", "settled", 25, 5},
		{"Catalogue the archive vault", "genesis", "genesis", "research", "archivist", "ada", "settled", 40, 10},
		{"Restore the relay mast", "dockside", "north-belt", "infrastructure", "operator", "grace", "settled", 60, 15},
		{"Open the eastern trade route", "dockside", "eastport", "trade", "broker", "linus", "completed", 80, 20},
		{"Chart the neighbouring subnets", "genesis", "genesis", "research", "archivist", "ada", "claimed", 35, 5},
		{"Broker a tariff truce", "dockside", "eastport", "diplomacy", "broker", "", "created", 30, 5},
		{"Audit the settlement ledger", "genesis", "north-belt", "research", "archivist", "", "created", 45, 10},
	} {
		kind := "organization"
		if m.publisher == "genesis" {
			kind = "planetary_government"
		}
		var rec missionRec
		n.civSend(http.MethodPost, "/v1/core/missions", testToken, missionBody(map[string]any{
			"title": m.title, "description": m.title + ", and report what was done.", "publisher": m.publisher,
			"publisher_kind": kind, "subnet_id": m.subnet, "domain": m.domain, "zone_id": nil,
			"required_role": m.role, "required_faction": nil, "payload": map[string]any{},
			"reward": reward(m.credit, m.credit/10, 0, m.share),
		})).wantOK(t, &rec)
		pause()
		for _, step := range []struct {
			state, action string
			body          any
		}{
			{"claimed", "claim", map[string]any{"claimer": m.claimer}},
			{"completed", "complete", map[string]any{"result": "done: " + m.title}},
			{"settled", "settle", map[string]any{}},
		} {
			if rec.State == m.upTo {
				break
			}
			n.civSend(http.MethodPost, "/v1/core/missions/"+rec.MissionID+"/"+step.action, testToken, step.body).wantOK(t, &rec)
			pause()
		}
		if rec.State != m.upTo {
			t.Fatalf("%s is %s, want %s", m.title, rec.State, m.upTo)
		}
	}

	// An oracle feed, as civnode oracle runs it: grace publishes, ada
	// subscribes and pays for the version she pulls.
	ctx, owner := context.Background(), commands.Actor{Kind: commands.ActorOwner}
	price, maxPrice := int64(5), int64(10)
	if _, err := n.core.Oracle.Publish(ctx, owner, n.log.NodeDID(), commands.PublishFeedInput{As: "grace", Feed: "prices.eth-usd",
		Payload: json.RawMessage(`{"pair":"ETH/USD","price":"3120.55"}`), Price: &price}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.core.Oracle.Subscribe(ctx, owner, n.log.NodeDID(), commands.SubscribeInput{As: "ada", Feed: "prices.eth-usd", MaxPrice: &maxPrice}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.core.Oracle.Pull(ctx, owner, n.log.NodeDID(), commands.PullInput{As: "ada", Feed: "prices.eth-usd"}); err != nil {
		t.Fatal(err)
	}
}

// e2eSummary is what e2e.mjs prints when it succeeds.
type e2eSummary struct {
	MissionID string `json:"mission_id"`
	Title     string `json:"title"`
	Chain     string `json:"chain"`
	FeedItems int    `json:"feed_items"`
	Cards     int    `json:"cards"`
	Phone     struct {
		ScrollWidth int `json:"scroll_width"`
		InnerWidth  int `json:"inner_width"`
	} `json:"phone"`
	Observer struct {
		Chain   string   `json:"chain"`
		Refused []string `json:"refused"`
	} `json:"observer"`
	// Treasuries is the treasuries panel's sentence after the live events.
	Treasuries string `json:"treasuries"`
	OracleRows int    `json:"oracle_rows"`
	// NoRegistry is the registry panel's notice on a node without one.
	NoRegistry string `json:"no_registry"`
}

// TestConsoleInBrowser opens the console in Debian's chromium, driven by
// playwright-core (testdata/console-e2e/e2e.mjs), against a node on a real
// loopback listener: it signs in with the owner token, waits for the feed to
// go live, publishes a mission over the API and sees it appear in the feed
// and on the board without a reload, claims it and sees the card move; after
// those live events the treasuries panel, the board and the charts must count
// the missions the node counts, and the feed must say the oracle's events in
// words; it checks
// that the chain indicator found no break and that nothing (an error, a CSP
// violation, a failed request) was reported; then it takes a full-page
// screenshot at a laptop's size and at a phone's, where nothing may overflow
// sideways, and signs in with an observer token, whose refused panels must say
// so, and opens a node without a registry, whose registry panel must say "Not
// configured" as information. The screenshots go to the test's artifact directory
// (go test -artifacts -outputdir DIR keeps them); with
// CIVNODE_UPDATE_SCREENSHOT=1 they also replace docs/img/console.png and
// docs/img/console-phone.png.
//
// It needs node, chromium at /usr/bin/chromium and playwright-core
// (npm ci --prefix http/testdata/console-e2e); without them it is skipped,
// except in CI (CI=true), where it fails.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium; the full suite runs it")
	}
	node := needNode(t)
	if _, err := os.Stat(chromiumPath); err != nil {
		testtool.Missing(t, "chromium is not installed at "+chromiumPath+": install it (apt-get install chromium) to run the console in a browser")
	}
	if _, err := os.Stat(filepath.Join(consoleE2EDir, "node_modules", "playwright-core", "package.json")); err != nil {
		testtool.Missing(t, "playwright-core is not installed: run `npm ci --prefix http/testdata/console-e2e`")
	}
	n := newConsoleNode(t)
	n.populate()
	observer := n.observerToken()
	bare := newConsoleNodeWith(t, false)

	dir := t.ArtifactDir()
	desktop, phone := filepath.Join(dir, "console.png"), filepath.Join(dir, "console-phone.png")
	out := runNode(t, node, "e2e.mjs", 4*time.Minute,
		"CIVNODE_URL="+n.url, "CIVNODE_TOKEN="+testToken, "CIVNODE_OBSERVER_TOKEN="+observer,
		"CIVNODE_CLAIMER=ada", "CIVNODE_CHROMIUM="+chromiumPath, "CIVNODE_NO_REGISTRY_URL="+bare.url,
		"CIVNODE_SCREENSHOT="+desktop, "CIVNODE_SCREENSHOT_PHONE="+phone)
	var sum e2eSummary
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	t.Logf("screenshots: %s, %s", desktop, phone)

	// What the browser saw is what the node holds.
	var rec missionRec
	n.get("/v1/core/missions/"+sum.MissionID).wantOK(t, &rec)
	if rec.State != "claimed" || rec.Claimer == nil || *rec.Claimer != "ada" {
		t.Errorf("the mission the browser watched is %s by %v, want claimed by ada", rec.State, rec.Claimer)
	}
	tip := n.log.Tip()
	if !strings.Contains(sum.Chain, "signatures verified") || !strings.Contains(sum.Chain, "ids recomputed") {
		t.Errorf("chain indicator %q: want ids recomputed and signatures verified", sum.Chain)
	}
	if !strings.HasPrefix(sum.Chain, "Chain intact") || !strings.Contains(sum.Chain, fmt.Sprintf("through seq %d", tip.Seq)) {
		t.Errorf("chain indicator %q, want intact through the tip, seq %d", sum.Chain, tip.Seq)
	}
	if sum.FeedItems < 30 || sum.Cards < 14 {
		t.Errorf("the console showed %d feed items and %d mission cards; want the replay and every mission", sum.FeedItems, sum.Cards)
	}
	if sum.Phone.InnerWidth != 375 || sum.Phone.ScrollWidth > sum.Phone.InnerWidth {
		t.Errorf("at the phone's width the page is %d wide in a %d viewport", sum.Phone.ScrollWidth, sum.Phone.InnerWidth)
	}
	for _, panel := range []string{"node", "missions", "identities", "treasuries", "registry"} {
		if !slices.Contains(sum.Observer.Refused, panel) {
			t.Errorf("the observer's %s panel does not say it may not read it (refused: %v)", panel, sum.Observer.Refused)
		}
	}
	// The treasuries panel counted, after the live events, what the node
	// counts now.
	var metrics struct {
		Missions struct {
			ByState map[string]int `json:"by_state"`
		} `json:"missions"`
	}
	n.get("/v1/civilization/metrics").wantOK(t, &metrics)
	st := metrics.Missions.ByState
	if want := fmt.Sprintf("Missions: %d created, %d claimed, %d completed, %d settled.", st["created"], st["claimed"], st["completed"], st["settled"]); !strings.Contains(sum.Treasuries, want) {
		t.Errorf("the treasuries panel says %q, want it to hold %q", sum.Treasuries, want)
	}
	if sum.OracleRows < 3 {
		t.Errorf("%d feed rows name the oracle feed in words, want its three events", sum.OracleRows)
	}
	if !strings.HasPrefix(sum.NoRegistry, "Not configured") {
		t.Errorf("on a node without a registry the registry panel says %q", sum.NoRegistry)
	}
	if !strings.HasPrefix(sum.Observer.Chain, "Chain intact") {
		t.Errorf("the observer's chain indicator: %q", sum.Observer.Chain)
	}

	for path, width := range map[string]uint32{desktop: 1280, phone: 375} {
		if w, h := pngSize(t, path); w != width || h < 800 {
			t.Errorf("%s is %dx%d, want %d wide and the full page high", path, w, h, width)
		}
	}
	if os.Getenv("CIVNODE_UPDATE_SCREENSHOT") == "1" {
		for src, dst := range map[string]string{desktop: "console.png", phone: "console-phone.png"} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "docs", "img", dst), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Log("wrote docs/img/console.png and docs/img/console-phone.png")
	}
}

// pngSize reads a PNG's width and height from its IHDR chunk.
func pngSize(t *testing.T, path string) (width, height uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 || !bytes.Equal(b[:8], []byte("\x89PNG\r\n\x1a\n")) || string(b[12:16]) != "IHDR" {
		t.Fatalf("%s is not a PNG", path)
	}
	return binary.BigEndian.Uint32(b[16:20]), binary.BigEndian.Uint32(b[20:24])
}
