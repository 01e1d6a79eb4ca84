package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/ijson"
	"github.com/civnode/civnode/oraclesock"
)

// feedFixture is a stopped node's data dir with three identities: ada
// publishes, bob has 20 credits from a settled mission, carol has none.
type feedFixture struct {
	dir     string
	nodeKey ed25519.PrivateKey
	dids    map[string]string // public_id → agent_did
	salts   map[string]string // public_id → key_salt
	// setupTip is the chain's tip after the set-up; the oracle's events
	// follow it.
	setupTip uint64
}

// newOracleFixture creates the node in tmp and plays the set-up through the
// commands of a core opened on its data dir, as an operator's API calls would.
func newOracleFixture(t *testing.T, tmp string) *feedFixture {
	t.Helper()
	dir := filepath.Join(tmp, "node")
	startNode(t, dir).stop(t)
	f := &feedFixture{dir: dir, dids: map[string]string{}, salts: map[string]string{}}
	ctx := context.Background()
	node, err := localnode.OpenExisting(ctx, datadir.Dir(dir), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	owner := commands.Actor{Kind: commands.ActorOwner, Governs: []string{"genesis"}}
	for _, slug := range []string{"ada", "bob", "carol"} {
		res, err := node.Identity.Bootstrap(ctx, owner, commands.BootstrapInput{DisplayName: "Agent " + slug, PublicID: &slug})
		if err != nil {
			t.Fatal(err)
		}
		f.dids[slug] = res.AgentDID
		salt, ok, err := node.Identities.KeySalt(res.AgentDID)
		if err != nil || !ok {
			t.Fatalf("key salt of %s: %v %v", slug, ok, err)
		}
		f.salts[slug] = salt
	}
	if _, err := node.Identity.UpdateControllerBinding(ctx, owner, commands.ControllerBindingInput{
		AgentDID: f.dids["bob"], ControllerKind: "local_model", ControllerRef: "bob@desk"}); err != nil {
		t.Fatal(err)
	}
	v := func(n int64) *int64 { return &n }
	m, err := node.Mission.Create(ctx, owner, commands.CreateMissionInput{Title: "Survey", Description: "Survey the belt.",
		Publisher: "genesis", PublisherKind: "planetary_government", Domain: "research", SubnetID: "genesis",
		Reward: &commands.RewardInput{AgentCredit: v(20), Reputation: v(1), Capacity: v(0), TreasuryShareCredit: v(0)}})
	if err != nil {
		t.Fatal(err)
	}
	result := "surveyed"
	if _, err := node.Mission.Claim(ctx, owner, m.MissionID, commands.ClaimMissionInput{Claimer: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Mission.Complete(ctx, owner, m.MissionID, commands.CompleteMissionInput{Result: &result}); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Mission.Settle(ctx, owner, m.MissionID, commands.SettleMissionInput{}); err != nil {
		t.Fatal(err)
	}
	if c, err := node.Identities.Credit(f.dids["bob"]); err != nil || c != 20 {
		t.Fatalf("bob's credit after the mission: %d %v", c, err)
	}
	f.setupTip = node.Log.Tip().Seq
	if f.nodeKey, err = datadir.LoadNodeKey(datadir.Dir(dir).KeyPath(), discardLogger()); err != nil {
		t.Fatal(err)
	}
	return f
}

// agentKey is the private key of the identity slug, which the node derives.
func (f *feedFixture) agentKey(t *testing.T, slug string) ed25519.PrivateKey {
	t.Helper()
	k, err := commands.AgentKey(f.nodeKey, f.salts[slug])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// runFeedCLI runs one oracle command on dir and requires its exit code.
func runFeedCLI(t *testing.T, dir string, stdin []byte, wantCode int, args ...string) cliResult {
	t.Helper()
	res := runCLI(t, stdin, append(append([]string{"oracle"}, args...), "--data-dir", dir)...)
	if res.code != wantCode {
		t.Fatalf("civnode oracle %s: code %d, want %d\nstdout %q\nstderr %q", strings.Join(args, " "), res.code, wantCode, res.stdout, res.stderr)
	}
	return res
}

// decodeStrict decodes b by the rule the oracle socket holds its lines to:
// I-JSON, member names matched exactly, unknown members refused.
func decodeStrict(b []byte, v any) error { return ijson.Decode(b, v) }

// runFeedJSON runs one oracle command with --json and decodes its one line.
func runFeedJSON(t *testing.T, dir string, wantCode int, v any, args ...string) cliResult {
	t.Helper()
	res := runFeedCLI(t, dir, nil, wantCode, append(args, "--json")...)
	if strings.Count(res.stdout, "\n") != 1 || !strings.HasSuffix(res.stdout, "\n") {
		t.Fatalf("civnode oracle %v --json: stdout %q, want one line", args, res.stdout)
	}
	if err := decodeStrict([]byte(res.stdout), v); err != nil {
		t.Fatalf("civnode oracle %v --json: %v in %s", args, err, res.stdout)
	}
	return res
}

// refusal is what --json prints for a failed command.
type refusal struct {
	Error oraclesock.Failure `json:"error"`
}

const ethUSD = `{"pair":"ETH/USD","price":"3120.55"}`

// feedScript plays publish → subscribe → pull and the price, balance and
// signature rules on f's data dir, with or without a node running on it;
// tip reads the chain's tip either way.
func feedScript(t *testing.T, f *feedFixture, tip func() uint64) {
	dir := f.dir
	unchanged := func(before uint64, what string) {
		t.Helper()
		if got := tip(); got != before {
			t.Errorf("%s appended %d events", what, got-before)
		}
	}

	res := runFeedCLI(t, dir, nil, 0, "publish", "prices.eth-usd", "--as", "ada", "--payload", ethUSD, "--price", "5")
	if want := "published prices.eth-usd version 1 as ada, price 5 credits, signed by " + f.dids["ada"] + "\nevent "; !strings.HasPrefix(res.stdout, want) {
		t.Errorf("publish stdout %q, want prefix %q", res.stdout, want)
	}
	res = runFeedCLI(t, dir, nil, 0, "subscribe", "prices.eth-usd", "--as", "bob", "--max-price", "4")
	if !strings.HasPrefix(res.stdout, "subscribed bob to prices.eth-usd, max price 4 credits a version\n") {
		t.Errorf("subscribe stdout %q", res.stdout)
	}

	// Price rules: above max_price is refused and records nothing; a higher
	// max_price lets the pull through.
	before := tip()
	res = runFeedCLI(t, dir, nil, 1, "pull", "prices.eth-usd", "--as", "bob")
	if res.stdout != "" || !strings.Contains(res.stderr, "price_above_max: version 1 of prices.eth-usd costs 5 credits, above the max_price 4 of bob") {
		t.Errorf("pull above max: stdout %q stderr %q", res.stdout, res.stderr)
	}
	var ref refusal
	runFeedJSON(t, dir, 1, &ref, "pull", "prices.eth-usd", "--as", "bob")
	if ref.Error.Kind != "conflict" || ref.Error.Code != "price_above_max" || ref.Error.Field != "feed" {
		t.Errorf("pull above max --json: %+v", ref.Error)
	}
	unchanged(before, "a pull above max_price")
	runFeedCLI(t, dir, nil, 0, "subscribe", "prices.eth-usd", "--as", "bob", "--max-price", "10")

	// Balance rules: the first pull of a version pays, the next is free.
	res = runFeedCLI(t, dir, nil, 0, "pull", "prices.eth-usd", "--as", "bob")
	if res.stdout != ethUSD+"\n" {
		t.Errorf("pull stdout %q, want the payload alone", res.stdout)
	}
	if res.stderr != "prices.eth-usd version 1 by ada, signature verified; charged 5 credits; bob has 15 credits\n" {
		t.Errorf("pull stderr %q", res.stderr)
	}
	before = tip()
	res = runFeedCLI(t, dir, nil, 0, "pull", "prices.eth-usd", "--as", "bob")
	if res.stdout != ethUSD+"\n" || !strings.Contains(res.stderr, "already paid for, charged nothing; bob has 15 credits") {
		t.Errorf("second pull: stdout %q stderr %q", res.stdout, res.stderr)
	}
	unchanged(before, "a second pull of a paid version")
	runFeedCLI(t, dir, nil, 0, "subscribe", "prices.eth-usd", "--as", "carol", "--max-price", "10")
	before = tip()
	res = runFeedCLI(t, dir, nil, 1, "pull", "prices.eth-usd", "--as", "carol")
	if res.stdout != "" || !strings.Contains(res.stderr, "insufficient_balance: carol has 0 credits; version 1 of prices.eth-usd costs 5") {
		t.Errorf("pull without credit: stdout %q stderr %q", res.stdout, res.stderr)
	}
	unchanged(before, "a pull without the credit")

	// A new version, its payload from stdin, charges again.
	v2 := "{\n  \"pair\": \"ETH/USD\",\n  \"price\": \"3098.10\"\n}\n"
	runFeedCLI(t, dir, []byte(v2), 0, "publish", "prices.eth-usd", "--as", "ada", "--payload", "-", "--price", "6")
	var pulled commands.Pulled
	runFeedJSON(t, dir, 0, &pulled, "pull", "prices.eth-usd", "--as", "bob")
	if pulled.Feed.Version != 2 || pulled.Charged != 6 || pulled.Balance != 9 || pulled.SettledEventID == "" ||
		string(pulled.Feed.Payload) != `{"pair":"ETH/USD","price":"3098.10"}` || pulled.Feed.PublisherDID != f.dids["ada"] {
		t.Errorf("pull of version 2: %+v", pulled)
	}
	if err := commands.VerifyFeed(pulled.Feed.OracleFeedPublished); err != nil {
		t.Errorf("the delivered version does not verify: %v", err)
	}

	// Version 3: the node signs with ada's key, derived from node.key and
	// her key_salt, over the documented bytes, which the payload's canonical
	// form is part of; anyone holding the chain verifies it against her DID.
	var v3 commands.FeedVersion
	runFeedJSON(t, dir, 0, &v3, "publish", "prices.eth-usd", "--as", "ada", "--payload", `{"b":2, "a":[1,"<&>"]}`, "--price", "7")
	signed := "civnode-oracle-feed-v1\n" + `{"feed":"prices.eth-usd","payload":{"a":[1,"<&>"],"b":2},"price":7,"publisher_did":"` +
		f.dids["ada"] + `","version":3}`
	sig, err := base64.StdEncoding.DecodeString(v3.Signature)
	if err != nil || v3.Version != 3 || string(v3.Payload) != `{"a":[1,"<&>"],"b":2}` ||
		!ed25519.Verify(f.agentKey(t, "ada").Public().(ed25519.PublicKey), []byte(signed), sig) {
		t.Errorf("version 3 %+v is not ada's signature over %q", v3, signed)
	}
	// A number the chain cannot keep exactly is refused, not rounded.
	before = tip()
	res = runFeedCLI(t, dir, nil, 1, "publish", "prices.eth-usd", "--as", "ada", "--payload", `{"n":12345678901234567891}`, "--price", "7")
	if !strings.Contains(res.stderr, "the number 12345678901234567891 cannot be kept exactly") {
		t.Errorf("publish of an inexact number: stderr %q", res.stderr)
	}
	unchanged(before, "a publish of an inexact number")

	// Balances are the identities' credits, moved by the pulls.
	var bals oraclesock.BalanceList
	runFeedJSON(t, dir, 0, &bals, "balance")
	got := map[string]int64{}
	for _, b := range bals.Balances {
		got[b.PublicID] = b.Credit
		if b.AgentDID != f.dids[b.PublicID] {
			t.Errorf("balance of %s names %s", b.PublicID, b.AgentDID)
		}
	}
	if fmt.Sprint(got) != "map[ada:11 bob:9 carol:0]" {
		t.Errorf("balances %v", got)
	}
	var one oraclesock.Balance
	runFeedJSON(t, dir, 0, &one, "balance", "--agent", "ada")
	if one != (oraclesock.Balance{PublicID: "ada", AgentDID: f.dids["ada"], Credit: 11}) {
		t.Errorf("balance --agent ada: %+v", one)
	}
	res = runFeedCLI(t, dir, nil, 0, "balance", "--agent", "bob")
	if !regexp.MustCompile(`^PUBLIC_ID +CREDIT +AGENT_DID\nbob +9 +` + f.dids["bob"] + `\n$`).MatchString(res.stdout) {
		t.Errorf("balance --agent bob:\n%s", res.stdout)
	}
	runFeedJSON(t, dir, 1, &ref, "balance", "--agent", "nobody")
	if ref.Error.Code != "identity_not_found" || ref.Error.Field != "agent" {
		t.Errorf("balance of an unknown identity: %+v", ref.Error)
	}

	var feeds oraclesock.FeedList
	runFeedJSON(t, dir, 0, &feeds, "feeds")
	if len(feeds.Feeds) != 1 {
		t.Fatalf("feeds %+v", feeds)
	}
	if fd := feeds.Feeds[0]; fd.Feed != "prices.eth-usd" || fd.Publisher != "ada" || fd.Version != 3 || fd.Price != 7 ||
		fd.Subscribers != 2 || fd.Pulls != 2 || fd.Earned != 11 || fd.EventID != v3.EventID || fd.PublishedAt != v3.PublishedAt {
		t.Errorf("feed %+v", fd)
	}
	res = runFeedCLI(t, dir, nil, 0, "feeds")
	if !regexp.MustCompile(`^FEED +PUBLISHER +VERSION +PRICE +SUBSCRIBERS +PULLS +EARNED +PUBLISHED_AT\n` +
		`prices\.eth-usd +ada +3 +7 +2 +2 +11 +\S+Z\n$`).MatchString(res.stdout) {
		t.Errorf("feeds:\n%s", res.stdout)
	}

	// Other refusals, each with nothing recorded.
	before = tip()
	for _, c := range []struct {
		args []string
		has  string
	}{
		{[]string{"publish", "prices.eth-usd", "--as", "bob", "--payload", "1", "--price", "1"}, "feed_owned: feed prices.eth-usd is published by ada"},
		{[]string{"publish", "Bad/Feed", "--as", "ada", "--payload", "1", "--price", "1"}, "invalid_field: feed must be"},
		{[]string{"publish", "f", "--as", "ada", "--payload", "{not json", "--price", "1"}, "payload must be JSON"},
		{[]string{"publish", "f", "--as", "ada", "--payload", "1", "--price", "-1"}, "price must be an integer from 0"},
		{[]string{"publish", "f", "--as", "nobody", "--payload", "1", "--price", "1"}, "identity_not_found: no identity has public_id nobody (as)"},
		{[]string{"subscribe", "prices.eth-usd", "--as", "ada", "--max-price", "9"}, "a publisher does not subscribe to its own feed"},
		{[]string{"subscribe", "nofeed", "--as", "bob", "--max-price", "9"}, "feed_not_found: no feed is named nofeed"},
		{[]string{"pull", "prices.eth-usd", "--as", "ada"}, "not_subscribed: ada is not subscribed to prices.eth-usd"},
	} {
		res := runFeedCLI(t, dir, nil, 1, c.args...)
		if res.stdout != "" || !strings.Contains(res.stderr, c.has) {
			t.Errorf("oracle %v: stdout %q, stderr %q, want %q", c.args, res.stdout, res.stderr, c.has)
		}
	}
	unchanged(before, "refused commands")
}

// TestOracleBothPaths plays the same script on a stopped node's data dir and
// through a running node's oracle socket, and requires the two chains to have
// the same shape: the same events with the same payloads but for the keys,
// DIDs and signatures of two different nodes.
func TestOracleBothPaths(t *testing.T) {
	var offline, online *feedFixture
	var n *node
	tmpOffline, tmpOnline := t.TempDir(), t.TempDir()
	t.Run("paths", func(t *testing.T) {
		t.Run("offline", func(t *testing.T) {
			t.Parallel()
			offline = newOracleFixture(t, tmpOffline)
			feedScript(t, offline, func() uint64 { return openTipSeq(t, offline.dir) })
		})
		t.Run("online", func(t *testing.T) {
			t.Parallel()
			online = newOracleFixture(t, tmpOnline)
			n = startNodeArgs(t, online.dir, "--log-level", "debug")
			feedScript(t, online, func() uint64 {
				var st stateBody
				getJSON(t, n.url+"/v1/state", n.token, 200, &st)
				return st.Chain.Seq
			})
			n.stop(t)
		})
	})
	if t.Failed() {
		return
	}
	if !strings.Contains(n.stderr.String(), "oracle request refused") || !strings.Contains(n.stderr.String(), "op=pull code=insufficient_balance") {
		t.Errorf("the node did not run the online commands; its log:\n%s", n.stderr)
	}

	a, b := feedChain(t, offline), feedChain(t, online)
	if len(a) == 0 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("the chains differ:\noffline:\n%s\nonline:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	nodeDIDs := map[string]bool{nodeDIDOf(t, offline.dir): true, nodeDIDOf(t, online.dir): true}
	for _, action := range []string{"oracle.published", "oracle.subscribed", "oracle.pulled"} {
		ea, eb := auditActions(t, offline.dir, action), auditActions(t, online.dir, action)
		if len(ea) == 0 || len(ea) != len(eb) {
			t.Errorf("%s: %d audit entries offline, %d online", action, len(ea), len(eb))
		}
		for _, e := range append(ea, eb...) {
			if !nodeDIDs[e.Actor] {
				t.Errorf("%s audited as %s, want the node DID", action, e.Actor)
			}
		}
	}
	res := runCLI(t, nil, "replay", "--data-dir", online.dir)
	if res.code != 0 || !regexp.MustCompile(`(?m)^feeds +1\nfeed_subscriptions +2\nfeed_pulls +2\nfeed_credits +11\noracle_skipped +0$`).MatchString(res.stdout) {
		t.Errorf("replay: code %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// feedChain is f's chain after its set-up, one line per event: its type and
// its payload with every DID and signature masked.
func feedChain(t *testing.T, f *feedFixture) []string {
	t.Helper()
	l := openTestLog(t, f.dir)
	defer l.Close()
	var out []string
	if err := l.Scan(f.setupTip+1, l.Tip().Seq, func(ev *eventlog.Event) error {
		var pl map[string]any
		if err := json.Unmarshal(ev.Payload, &pl); err != nil {
			return err
		}
		for k := range pl {
			if strings.HasSuffix(k, "_did") || k == "signature" {
				pl[k] = "<masked>"
			}
		}
		b, err := json.Marshal(pl)
		out = append(out, ev.Type+" "+string(b))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOraclePullRefusesForgedFeed: a version whose signature does not verify
// against its publisher, however it reached the chain, is neither delivered
// nor paid for, and the pull exits 1 saying why.
func TestOraclePullRefusesForgedFeed(t *testing.T) {
	f := newOracleFixture(t, t.TempDir())
	runFeedCLI(t, f.dir, nil, 0, "publish", "wx.lisbon", "--as", "ada", "--payload", `{"temp_c":18.5}`, "--price", "2")
	runFeedCLI(t, f.dir, nil, 0, "subscribe", "wx.lisbon", "--as", "bob", "--max-price", "5")

	// Version 2 as ada signed it, with its payload changed afterwards.
	signed, err := commands.FeedSigningBytes("wx.lisbon", f.dids["ada"], 2, 2, json.RawMessage(`{"temp_c":19}`))
	if err != nil {
		t.Fatal(err)
	}
	forged := events.OracleFeedPublished{Feed: "wx.lisbon", Publisher: "ada", PublisherDID: f.dids["ada"], Version: 2, Price: 2,
		Payload:   json.RawMessage(`{"temp_c":45}`),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(f.agentKey(t, "ada"), signed))}
	node, err := localnode.OpenExisting(context.Background(), datadir.Dir(f.dir), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Log.Append(context.Background(), eventlog.Draft{Type: events.TypeOracleFeedPublished, Payload: forged}); err != nil {
		t.Fatal(err)
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	before := openTipSeq(t, f.dir)
	res := runFeedCLI(t, f.dir, nil, 1, "pull", "wx.lisbon", "--as", "bob")
	if res.stdout != "" || !strings.Contains(res.stderr, "feed_unverified: version 2 of wx.lisbon is not delivered: the signature does not verify against "+f.dids["ada"]) {
		t.Errorf("pull of a forged version: stdout %q stderr %q", res.stdout, res.stderr)
	}
	if got := openTipSeq(t, f.dir); got != before {
		t.Errorf("the refused pull appended %d events", got-before)
	}
	var bal oraclesock.Balance
	runFeedJSON(t, f.dir, 0, &bal, "balance", "--agent", "bob")
	if bal.Credit != 20 {
		t.Errorf("bob has %d credits after a refused pull, want 20", bal.Credit)
	}
}
