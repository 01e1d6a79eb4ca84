package oraclesock_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/unixsock"
	"github.com/civnode/civnode/oraclesock"
	"github.com/civnode/civnode/projections"
)

// exchangeTimeout bounds every read and write of these tests.
const exchangeTimeout = 30 * time.Second

// coreOracle runs the oracle on an opened core as its owner, the way the
// node behind its socket does.
type coreOracle struct{ c *core.Core }

var owner = commands.Actor{Kind: commands.ActorOwner}

func (o coreOracle) Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error) {
	return o.c.Oracle.Publish(ctx, owner, o.c.Log.NodeDID(), in)
}

func (o coreOracle) Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error) {
	return o.c.Oracle.Subscribe(ctx, owner, o.c.Log.NodeDID(), in)
}

func (o coreOracle) Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error) {
	return o.c.Oracle.Pull(ctx, owner, o.c.Log.NodeDID(), in)
}

func (o coreOracle) Balances(_ context.Context, publicID string) ([]oraclesock.Balance, error) {
	out := []oraclesock.Balance{}
	if publicID != "" {
		id, ok, err := o.c.Identities.IdentityBySlug(publicID)
		if err != nil || !ok {
			return nil, commands.NotFound("identity_not_found", "agent", "no identity has public_id %s", publicID)
		}
		credit, err := o.c.Identities.Credit(id.AgentDID)
		return append(out, oraclesock.Balance{PublicID: id.PublicID, AgentDID: id.AgentDID, Credit: credit}), err
	}
	recs, _, err := o.c.Identities.List(projections.Page{Limit: 1000})
	for _, r := range recs {
		out = append(out, oraclesock.Balance{PublicID: r.PublicID, AgentDID: r.AgentDID, Credit: r.Stats.Credit})
	}
	return out, err
}

func (o coreOracle) Feeds(context.Context) ([]oraclesock.Feed, error) {
	feeds, err := o.c.Feeds.Feeds()
	out := make([]oraclesock.Feed, len(feeds))
	for i, f := range feeds {
		out[i] = oraclesock.Feed{Feed: f.Feed, Publisher: f.Publisher, Version: f.Version, Price: f.Price, EventID: f.EventID}
	}
	return out, err
}

// oracleNode is a node's core on a Pebble store in a temporary directory,
// with ada and bob, and 20 credits paid to bob by a settled mission, serving
// its oracle on a unix socket. It returns the core and the socket's path.
func oracleNode(t *testing.T) (*core.Core, string) {
	t.Helper()
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	logger := slog.New(slog.DiscardHandler)
	c, err := core.Open(eventlog.Options{Dir: filepath.Join(t.TempDir(), "db"), Key: key, Logger: logger}, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Log.Close() })
	gov := commands.Actor{Kind: commands.ActorOwner, Governs: []string{"genesis"}}
	for _, slug := range []string{"ada", "bob"} {
		if _, err := c.Identity.Bootstrap(ctx, gov, commands.BootstrapInput{DisplayName: "Agent " + slug, PublicID: &slug}); err != nil {
			t.Fatal(err)
		}
	}
	bob, _, err := c.Identities.IdentityBySlug("bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Identity.UpdateControllerBinding(ctx, gov, commands.ControllerBindingInput{
		AgentDID: bob.AgentDID, ControllerKind: "local_model", ControllerRef: "bob@desk"}); err != nil {
		t.Fatal(err)
	}
	v := func(n int64) *int64 { return &n }
	m, err := c.Mission.Create(ctx, gov, commands.CreateMissionInput{Title: "Survey", Description: "Survey the belt.",
		Publisher: "genesis", PublisherKind: "planetary_government", Domain: "research", SubnetID: "genesis",
		Reward: &commands.RewardInput{AgentCredit: v(20), Reputation: v(1), Capacity: v(0), TreasuryShareCredit: v(0)}})
	if err != nil {
		t.Fatal(err)
	}
	result := "surveyed"
	if _, err := c.Mission.Claim(ctx, gov, m.MissionID, commands.ClaimMissionInput{Claimer: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mission.Complete(ctx, gov, m.MissionID, commands.CompleteMissionInput{Result: &result}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mission.Settle(ctx, gov, m.MissionID, commands.SettleMissionInput{}); err != nil {
		t.Fatal(err)
	}

	sock := filepath.Join(t.TempDir(), "oracle.sock")
	ln, err := unixsock.Listen(sock, logger)
	if err != nil {
		t.Fatal(err)
	}
	s := oraclesock.Serve(ctx, ln, coreOracle{c}, logger)
	t.Cleanup(func() { s.Close() })
	return c, sock
}

// exchange writes lines on conn and returns the answer lines it reads, one
// per request line that is not blank, each decoded with unknown members
// refused.
func exchange(t *testing.T, conn net.Conn, br *bufio.Reader, lines ...string) []oraclesock.Response {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(exchangeTimeout)); err != nil {
		t.Fatal(err)
	}
	var out []oraclesock.Response
	for _, l := range lines {
		if _, err := io.WriteString(conn, l+"\n"); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		ans, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("answer to %q: %v", l, err)
		}
		var r oraclesock.Response
		dec := json.NewDecoder(strings.NewReader(string(ans)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("answer to %q: %v in %s", l, err, ans)
		}
		out = append(out, r)
	}
	return out
}

// TestExchange: the socket serves newline-delimited JSON, not HTTP, in a
// file of mode 0600: several requests on one connection are each answered on
// one line, in order, with exactly one of result and error; a blank line is
// no request; a refusal of the commands keeps its kind and code.
func TestExchange(t *testing.T) {
	c, sock := oracleNode(t)
	tip := c.Log.Tip().Seq
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want a socket with mode 0600", sock, fi, err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	answers := exchange(t, conn, br,
		`{"op":"feeds"}`,
		`{"op":"fly"}`,
		`not json`,
		`{"op":"balance","args":{"agent":"bob","extra":1}}`,
		``,
		`{"op":"balance","args":{"agent":"bob"}}`,
		`GET /v1/health HTTP/1.1`,
		`{"op":"pull","args":{"as":"bob","feed":"nofeed"}}`,
		`{"op":"feeds","args":{}}`,
		`{"op":""}`,
	)
	for _, w := range []struct {
		i                 int
		kind, code, field string
	}{
		{1, "invalid", "unknown_op", "op"}, {2, "invalid", "invalid_json", ""}, {3, "invalid", "invalid_json", "extra"},
		{5, "invalid", "invalid_json", ""}, {6, "not_found", "feed_not_found", "feed"}, {8, "invalid", "missing_field", "op"},
	} {
		if e := answers[w.i].Error; e == nil || e.Kind != w.kind || e.Code != w.code || e.Field != w.field || answers[w.i].Result != nil {
			t.Errorf("answer %d: %+v, want %s %s of field %q", w.i, answers[w.i], w.kind, w.code, w.field)
		}
	}
	for _, i := range []int{0, 7} {
		if string(answers[i].Result) != `{"feeds":[]}` || answers[i].Error != nil {
			t.Errorf("answer %d: %+v, want no feeds", i, answers[i])
		}
	}
	bob, ok, err := c.Identities.IdentityBySlug("bob")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := `{"balances":[{"public_id":"bob","agent_did":"` + bob.AgentDID + `","credit":20}]}`
	if string(answers[4].Result) != want || answers[4].Error != nil {
		t.Errorf("balance answer %+v, want %s", answers[4], want)
	}
	if c.Log.Tip().Seq != tip {
		t.Error("the exchange appended events")
	}
}

// TestExchangeDecodesStrictly: a request line is held to the rule of HTTP
// request bodies: a line that is not I-JSON, or names a member twice (which
// a last-wins decoder would settle silently), or a member not exactly, or
// holds more than one value, is invalid_json naming the member at fault, and
// runs nothing.
func TestExchangeDecodesStrictly(t *testing.T) {
	c, sock := oracleNode(t)
	tip := c.Log.Tip().Seq
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	answers := exchange(t, conn, bufio.NewReader(conn),
		`{"op":"balance","args":{"agent":"nobody","agent":"bob"}}`,
		`{"op":"balance","op":"feeds"}`,
		`{"op":"balance","args":{"agent":"bob"},"args":{"agent":"nobody"}}`,
		`{"op":"balance","args":{"agent":"b\ud800ob"}}`,
		"{\"op\":\"balance\",\"args\":{\"agent\":\"b\xffob\"}}",
		`{"OP":"feeds"}`,
		`{"op":"publish","args":{"as":"ada","feed":"dup.feed","payload":{"p":1,"p":2},"price":1}}`,
		`{"op":"feeds"}{"op":"feeds"}`,
		`{"op":"balance","args":[1]}`,
	)
	for i, w := range []struct{ field, says string }{
		{"agent", `field "args.agent" appears more than once`},
		{"op", `field "op" appears more than once`},
		{"args", `field "args" appears more than once`},
		{"agent", `lone surrogate`},
		{"agent", `invalid UTF-8`},
		{"OP", `unknown field "OP"`},
		{"payload.p", `field "args.payload.p" appears more than once`},
		{"", `more than one JSON value`},
		{"args", `args: `},
	} {
		if e := answers[i].Error; e == nil || e.Kind != "invalid" || e.Code != "invalid_json" || e.Field != w.field ||
			!strings.Contains(e.Message, w.says) || answers[i].Result != nil {
			t.Errorf("answer %d: %+v, want invalid_json, field %q, saying %q", i, answers[i], w.field, w.says)
		}
	}
	if c.Log.Tip().Seq != tip {
		t.Error("a refused request appended events")
	}
}

// TestExchangeRequestTooLarge: a request line over RequestLimit is answered
// with request_too_large and its connection closed; other connections go on.
func TestExchangeRequestTooLarge(t *testing.T) {
	_, sock := oracleNode(t)
	big, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	big.SetDeadline(time.Now().Add(exchangeTimeout))
	go big.Write([]byte(`{"op":"feeds","args":"` + strings.Repeat("x", oraclesock.RequestLimit) + "\"}\n"))
	bbr := bufio.NewReader(big)
	line, err := bbr.ReadBytes('\n')
	if err != nil || !strings.Contains(string(line), `"code":"request_too_large"`) {
		t.Errorf("oversized request: %q %v", line, err)
	}
	if _, err := bbr.ReadByte(); err == nil {
		t.Error("the connection of an oversized request stays open")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if a := exchange(t, conn, bufio.NewReader(conn), `{"op":"feeds"}`); a[0].Error != nil {
		t.Errorf("feeds after an oversized request elsewhere: %+v", a[0])
	}
}

// TestClientRoundTrip: the client runs the commands on the node behind the
// socket, a payload crossing in the very bytes it was given; a refusal comes
// back as the *commands.Error the commands return, with its kind, code and
// field; a closed node is a failure to reach the socket.
func TestClientRoundTrip(t *testing.T) {
	c, sock := oracleNode(t)
	ctx := context.Background()
	v := func(n int64) *int64 { return &n }
	cl, err := oraclesock.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	payload := json.RawMessage(`{"pair":"<eth>&<usd>","price":3120}`)
	fv, err := cl.Publish(ctx, commands.PublishFeedInput{As: "ada", Feed: "prices.eth-usd", Payload: payload, Price: v(5)})
	if err != nil || fv.Version != 1 || fv.EventID == "" {
		t.Fatalf("publish: %+v %v", fv, err)
	}
	feeds, err := cl.Feeds(ctx)
	if err != nil || len(feeds) != 1 || feeds[0].Feed != "prices.eth-usd" || feeds[0].EventID != fv.EventID || feeds[0].Price != 5 {
		t.Fatalf("feeds: %+v %v", feeds, err)
	}
	if _, err := cl.Subscribe(ctx, commands.SubscribeInput{As: "bob", Feed: "prices.eth-usd", MaxPrice: v(5)}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	pulled, err := cl.Pull(ctx, commands.PullInput{As: "bob", Feed: "prices.eth-usd"})
	if err != nil || string(pulled.Feed.Payload) != string(payload) {
		t.Fatalf("pull: %+v %v; want the payload %s as published", pulled, err, payload)
	}
	bals, err := cl.Balances(ctx, "bob")
	if err != nil || len(bals) != 1 || bals[0].Credit != 15 {
		t.Fatalf("bob's balance after a pull of price 5: %+v %v", bals, err)
	}
	all, err := cl.Balances(ctx, "")
	if err != nil || len(all) != 2 {
		t.Fatalf("every balance: %+v %v", all, err)
	}

	var ce *commands.Error
	_, err = cl.Pull(ctx, commands.PullInput{As: "bob", Feed: "nofeed"})
	if !errors.As(err, &ce) || ce.Kind != commands.KindNotFound || ce.Code != "feed_not_found" || ce.Field != "feed" {
		t.Errorf("pull of no feed: %v, want the commands' feed_not_found", err)
	}
	_, err = cl.Balances(ctx, "nobody")
	if !errors.As(err, &ce) || ce.Code != "identity_not_found" || ce.Field != "agent" {
		t.Errorf("balance of nobody: %v, want identity_not_found", err)
	}

	if err := c.Log.Close(); err != nil {
		t.Fatal(err)
	}
	var ne *oraclesock.NodeError
	_, err = cl.Publish(ctx, commands.PublishFeedInput{As: "ada", Feed: "prices.eth-usd", Payload: payload, Price: v(5)})
	if !errors.As(err, &ne) || ne.Kind != "unavailable" || !strings.Contains(err.Error(), sock) {
		t.Errorf("publish on a closed log: %v, want a NodeError naming the socket", err)
	}
}
