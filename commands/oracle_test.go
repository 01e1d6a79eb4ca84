package commands_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// The oracle's commands on a node wired as cmd wires it: identities earn
// credits by settled missions, publish and pull feeds, and pay each other.

type oracleNode struct {
	*missionNode
	core *core.Core
}

func newOracleNode(t *testing.T) *oracleNode {
	t.Helper()
	c := openCore(t, nil)
	return &oracleNode{core: c, missionNode: &missionNode{t: t, log: c.Log, ids: c.Identities,
		idsD: c.Identities.Decisions(), missions: c.Missions, mD: c.Missions.Decisions(),
		identity: c.Identity, mission: c.Mission}}
}

// earn gives did's identity slug credits: a mission the node publishes, slug
// claims and completes, and the node settles (reward agent_credit 10).
func (n *oracleNode) earn(slug string) {
	n.t.Helper()
	ctx := context.Background()
	m, err := n.mission.Create(ctx, owner, createInput("genesis", events.PublisherPlanetaryGovernment))
	if err != nil {
		n.t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error {
			_, err := n.mission.Claim(ctx, owner, m.MissionID, commands.ClaimMissionInput{Claimer: slug})
			return err
		},
		func() error {
			_, err := n.mission.Complete(ctx, owner, m.MissionID, commands.CompleteMissionInput{Result: ptr("done")})
			return err
		},
		func() error {
			_, err := n.mission.Settle(ctx, owner, m.MissionID, commands.SettleMissionInput{})
			return err
		},
	} {
		if err := step(); err != nil {
			n.t.Fatal(err)
		}
	}
}

func (n *oracleNode) credit(did string) int64 { return must(n.core.Identities.Credit(did)) }

func (n *oracleNode) publish(as, feed, payload string, price int64) (commands.FeedVersion, error) {
	return n.core.Oracle.Publish(context.Background(), owner, "node", commands.PublishFeedInput{
		As: as, Feed: feed, Payload: json.RawMessage(payload), Price: &price})
}

func (n *oracleNode) subscribe(as, feed string, max int64) (commands.Subscription, error) {
	return n.core.Oracle.Subscribe(context.Background(), owner, "node", commands.SubscribeInput{As: as, Feed: feed, MaxPrice: &max})
}

func (n *oracleNode) pull(as, feed string) (commands.Pulled, error) {
	return n.core.Oracle.Pull(context.Background(), owner, "node", commands.PullInput{As: as, Feed: feed})
}

// refused is idNode.refused for this node.
func (n *oracleNode) refused(t *testing.T, err error, tip uint64, kind commands.Kind, code, field string) {
	t.Helper()
	(&idNode{t: n.t, log: n.log}).refused(t, err, tip, kind, code, field)
}

func TestOraclePublishSubscribePull(t *testing.T) {
	n := newOracleNode(t)
	pubDID := n.agent("weather", "order", "archivist", true)
	subDID := n.agent("farmer", "order", "archivist", true)
	n.earn("farmer") // 10 credits

	v1, err := n.publish("weather", "wx.lisbon", `{"temp_c":18.5}`, 3)
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version != 1 || v1.PublisherDID != pubDID || v1.Publisher != "weather" {
		t.Fatalf("published %+v", v1)
	}
	// The signature is the identity's, by its derived key, over the documented bytes.
	if err := commands.VerifyFeed(v1.OracleFeedPublished); err != nil {
		t.Fatalf("published feed does not verify: %v", err)
	}
	if _, err := n.subscribe("farmer", "wx.lisbon", 5); err != nil {
		t.Fatal(err)
	}
	p, err := n.pull("farmer", "wx.lisbon")
	if err != nil {
		t.Fatal(err)
	}
	if p.Charged != 3 || p.Balance != 7 || p.SettledEventID == "" || string(p.Feed.Payload) != `{"temp_c":18.5}` {
		t.Fatalf("pull = %+v", p)
	}
	if got := n.credit(pubDID); got != 3 {
		t.Errorf("publisher credit = %d, want 3", got)
	}
	if got := n.credit(subDID); got != 7 {
		t.Errorf("subscriber credit = %d, want 7", got)
	}
	// The same version again is free and records nothing.
	tip := n.log.Tip().Seq
	p, err = n.pull("farmer", "wx.lisbon")
	if err != nil || p.Charged != 0 || p.Balance != 7 || n.log.Tip().Seq != tip {
		t.Fatalf("second pull of version 1 = %+v, %v; tip %d → %d", p, err, tip, n.log.Tip().Seq)
	}
	// A new version is paid for again.
	if _, err := n.publish("weather", "wx.lisbon", `{"temp_c":19}`, 3); err != nil {
		t.Fatal(err)
	}
	if p, err = n.pull("farmer", "wx.lisbon"); err != nil || p.Charged != 3 || p.Feed.Version != 2 || p.Balance != 4 {
		t.Fatalf("pull of version 2 = %+v, %v", p, err)
	}
	// The node-wide totals do not move: credits changed hands.
	var types []string
	for seq := tip + 1; seq <= n.log.Tip().Seq; seq++ {
		types = append(types, must(n.log.Event(seq)).Type)
	}
	if got := strings.Join(types, " "); got != "oracle.feed.published oracle.settled" {
		t.Errorf("events = %s", got)
	}
}

func TestOraclePriceAndBalanceRules(t *testing.T) {
	n := newOracleNode(t)
	n.agent("weather", "order", "archivist", true)
	poorDID := n.agent("poor", "order", "archivist", true)
	n.agent("richer", "order", "archivist", true)
	n.earn("richer")
	if _, err := n.publish("weather", "wx.oslo", `[1,2,3]`, 8); err != nil {
		t.Fatal(err)
	}

	// Pulling without a subscription.
	tip := n.log.Tip().Seq
	_, err := n.pull("richer", "wx.oslo")
	n.refused(t, err, tip, commands.KindConflict, "not_subscribed", "feed")

	// A price above the subscription's max is not delivered, nor charged.
	if _, err := n.subscribe("richer", "wx.oslo", 5); err != nil {
		t.Fatal(err)
	}
	tip = n.log.Tip().Seq
	_, err = n.pull("richer", "wx.oslo")
	n.refused(t, err, tip, commands.KindConflict, "price_above_max", "feed")
	// Raised, it is.
	raised, err := n.subscribe("richer", "wx.oslo", 8)
	if err != nil {
		t.Fatal(err)
	}
	// The same max_price again changes nothing and appends nothing.
	tip = n.log.Tip().Seq
	if again, err := n.subscribe("richer", "wx.oslo", 8); err != nil || again != raised || n.log.Tip().Seq != tip {
		t.Errorf("subscribe again with the same max_price = %+v, %v (tip %d → %d), want %+v unchanged", again, err, tip, n.log.Tip().Seq, raised)
	}
	if p, err := n.pull("richer", "wx.oslo"); err != nil || p.Charged != 8 || p.Balance != 2 {
		t.Fatalf("pull after raising max_price = %+v, %v", p, err)
	}

	// A subscriber short of credit: a clear error, and nothing recorded.
	if _, err := n.subscribe("poor", "wx.oslo", 100); err != nil {
		t.Fatal(err)
	}
	tip = n.log.Tip().Seq
	_, err = n.pull("poor", "wx.oslo")
	n.refused(t, err, tip, commands.KindConflict, "insufficient_balance", "as")
	var ce *commands.Error
	if !asCommandError(err, &ce) || !strings.Contains(ce.Message, "has 0 credits") || !strings.Contains(ce.Message, "costs 8") {
		t.Errorf("message = %v", err)
	}
	if got := n.credit(poorDID); got != 0 {
		t.Errorf("poor credit = %d after a refused pull", got)
	}

	// Input rules.
	tip = n.log.Tip().Seq
	_, err = n.publish("weather", "Bad Name", `{}`, 1)
	n.refused(t, err, tip, commands.KindInvalid, "invalid_field", "feed")
	_, err = n.publish("weather", "wx.x", `{"a":`, 1)
	n.refused(t, err, tip, commands.KindInvalid, "invalid_field", "payload")
	_, err = n.publish("weather", "wx.x", `{}`, -1)
	n.refused(t, err, tip, commands.KindInvalid, "invalid_field", "price")
	_, err = n.publish("nobody", "wx.x", `{}`, 1)
	n.refused(t, err, tip, commands.KindNotFound, "identity_not_found", "as")
	_, err = n.subscribe("richer", "wx.none", 1)
	n.refused(t, err, tip, commands.KindNotFound, "feed_not_found", "feed")
	_, err = n.subscribe("weather", "wx.oslo", 1)
	n.refused(t, err, tip, commands.KindInvalid, "invalid_field", "as")
	// A feed is its first publisher's.
	_, err = n.publish("richer", "wx.oslo", `{}`, 1)
	n.refused(t, err, tip, commands.KindForbidden, "feed_owned", "")
	// An agent token acts for its own identity only.
	_, err = n.core.Oracle.Publish(context.Background(), agentActor(poorDID), "tok", commands.PublishFeedInput{
		As: "weather", Feed: "wx.x", Payload: json.RawMessage(`{}`), Price: ptr(int64(1))})
	n.refused(t, err, tip, commands.KindForbidden, "forbidden", "")
}

// TestOracleConcurrentPullsPayOnce: sixteen pulls of one version at once pay
// for it once.
func TestOracleConcurrentPullsPayOnce(t *testing.T) {
	n := newOracleNode(t)
	pub := n.agent("weather", "order", "archivist", true)
	sub := n.agent("farmer", "order", "archivist", true)
	n.earn("farmer")
	if _, err := n.publish("weather", "wx.rome", `{"t":1}`, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := n.subscribe("farmer", "wx.rome", 2); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	charged := int64(0)
	for range 16 {
		wg.Go(func() {
			p, err := n.pull("farmer", "wx.rome")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			charged += p.Charged
			mu.Unlock()
		})
	}
	wg.Wait()
	if charged != 2 || n.credit(sub) != 8 || n.credit(pub) != 2 {
		t.Errorf("charged %d in all; credits subscriber %d publisher %d", charged, n.credit(sub), n.credit(pub))
	}
}

// TestOracleBadSignatureNotDelivered: a feed version whose signature does not
// verify against its publisher, however it came into the chain, is neither
// delivered nor paid for.
func TestOracleBadSignatureNotDelivered(t *testing.T) {
	n := newOracleNode(t)
	pubDID := n.agent("weather", "order", "archivist", true)
	subDID := n.agent("farmer", "order", "archivist", true)
	n.earn("farmer")
	good, err := n.publish("weather", "wx.paris", `{"t":1}`, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.subscribe("farmer", "wx.paris", 5); err != nil {
		t.Fatal(err)
	}
	// Version 2 as a chain written by something other than these commands
	// could hold it: the payload changed after it was signed, or signed by
	// another key.
	other := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	salt, ok := found(n.core.Identities.KeySalt(pubDID))
	if !ok {
		t.Fatal("weather has no key salt")
	}
	own := must(commands.AgentKey(ed25519.NewKeyFromSeed(nodeSeed), salt))
	forged := func(version uint64, payload string, key ed25519.PrivateKey, signedPayload string) events.OracleFeedPublished {
		msg, err := commands.FeedSigningBytes("wx.paris", pubDID, version, 2, json.RawMessage(signedPayload))
		if err != nil {
			t.Fatal(err)
		}
		return events.OracleFeedPublished{Feed: "wx.paris", Publisher: "weather", PublisherDID: pubDID, Version: version,
			Price: 2, Payload: json.RawMessage(payload), Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))}
	}
	for i, f := range []events.OracleFeedPublished{
		forged(2, `{"t":99}`, own, `{"t":2}`),  // altered after its publisher signed it
		forged(3, `{"t":3}`, other, `{"t":3}`), // another key
		func() events.OracleFeedPublished {
			f := good.OracleFeedPublished
			f.Version, f.Signature = 4, "AAAA"
			return f
		}(),
	} {
		if _, err := n.log.Append(context.Background(), eventlog.Draft{Type: events.TypeOracleFeedPublished, Payload: f}); err != nil {
			t.Fatal(err)
		}
		tip := n.log.Tip().Seq
		_, err := n.pull("farmer", "wx.paris")
		n.refused(t, err, tip, commands.KindConflict, "feed_unverified", "feed")
		if got := n.credit(subDID); got != 10 {
			t.Errorf("forgery %d: subscriber credit = %d, want 10 (nothing paid)", i, got)
		}
	}
	if err := commands.VerifyFeed(good.OracleFeedPublished); err != nil {
		t.Errorf("the node's own signature does not verify: %v", err)
	}
}

// TestVerifyFeedPinsTheSignedBytes: the signed bytes are the domain and the
// RFC 8785 object, computed here by hand.
func TestVerifyFeedPinsTheSignedBytes(t *testing.T) {
	got, err := commands.FeedSigningBytes("wx.lisbon", "did:key:z6Mk", 2, 3, json.RawMessage(`{ "temp_c" : 18.5, "at":"noon" }`))
	if err != nil {
		t.Fatal(err)
	}
	want := "civnode-oracle-feed-v1\n" +
		`{"feed":"wx.lisbon","payload":{"at":"noon","temp_c":18.5},"price":3,"publisher_did":"did:key:z6Mk","version":2}`
	if string(got) != want {
		t.Errorf("signing bytes\n got %s\nwant %s", got, want)
	}
}

func asCommandError(err error, target **commands.Error) bool {
	ce, ok := err.(*commands.Error)
	if ok {
		*target = ce
	}
	return ok
}
