package commands_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
)

// The registry proxy's commands against a fake registry over real HTTP
// (servicenettest), with the node wired as cmd wires it: a real log folding
// into the servicenet read model, the real registry client, and a keystore of
// real payment-account keys in a temporary directory.

const snCredential = "reg-cred-commands-test"

// snNode is one node with its fake registry.
type snNode struct {
	t      *testing.T
	dir    string // the log's directory; "" in memory
	keyDir string // the payment-account keys
	keys   *countingKeys
	reg    *servicenettest.Registry
	cfg    snConfig
	logs   *snLogBuffer

	core *core.Core
	log  *eventlog.Log
	sn   *commands.Servicenet
}

// snConfig adjusts the node: client time-outs and retries, and a log on disk.
type snConfig struct {
	onDisk      bool
	readTimeout time.Duration // default 2s
	retries     int           // default 2
	// wrap, if set, stands between the commands and the registry client.
	wrap func(commands.Registry) commands.Registry
}

func newSNNode(t *testing.T, cfg snConfig) *snNode {
	t.Helper()
	key := ed25519.NewKeyFromSeed(nodeSeed)
	pub := key.Public().(ed25519.PublicKey)
	n := &snNode{t: t, cfg: cfg, keyDir: t.TempDir(), logs: &snLogBuffer{}}
	n.keys = &countingKeys{Keystore: servicenet.NewKeystore(n.keyDir)}
	if cfg.onDisk {
		n.dir = t.TempDir()
	}
	n.reg = servicenettest.New(t, servicenettest.Options{NodeKey: pub, NodeDID: eventlog.DIDKey(pub), Credential: snCredential})
	n.open()
	return n
}

// open opens the log and the commands (again, after close).
func (n *snNode) open() {
	t := n.t
	t.Helper()
	key := ed25519.NewKeyFromSeed(nodeSeed)
	logger := slog.New(slog.NewJSONHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	readTimeout, retries := n.cfg.readTimeout, n.cfg.retries
	if readTimeout == 0 {
		readTimeout = 2 * time.Second
	}
	if retries == 0 {
		retries = 2
	}
	client, err := servicenet.New(servicenet.Config{BaseURL: n.reg.URL, Credential: snCredential,
		NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)), Sign: func(m []byte) []byte { return ed25519.Sign(key, m) },
		ReadTimeout: readTimeout, Retries: retries, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		CardTTL: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	opts := eventlog.Options{Key: key, Logger: logger}
	if n.dir != "" {
		opts.Dir = n.dir
	} else {
		opts.InMemory = true
	}
	c, err := core.Open(opts, core.Config{Keys: n.keys, Registry: client})
	if err != nil {
		t.Fatal(err)
	}
	var reg commands.Registry = client
	if n.cfg.wrap != nil {
		reg = n.cfg.wrap(client)
	}
	sn, err := commands.NewServicenet(commands.ServicenetOptions{Log: c.Log, Registry: reg,
		Model: c.Receipts.Decisions(), Accounts: c.PaymentAccounts,
		PollInterval: 2 * time.Millisecond, PollMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.core, n.log, n.sn = c, c.Log, sn
	t.Cleanup(func() { c.Close() })
}

// restart closes the log and opens it again from its directory.
func (n *snNode) restart() {
	n.t.Helper()
	if err := n.core.Close(); err != nil {
		n.t.Fatal(err)
	}
	n.open()
}

// account creates payment account ref with the limits ("" for none) and
// returns its address.
func (n *snNode) account(ref, perPayment, perDay string) string {
	n.t.Helper()
	in := commands.CreatePaymentAccountInput{Ref: &ref}
	if perPayment != "" {
		in.MaxPerPayment = &perPayment
	}
	if perDay != "" {
		in.MaxPerDay = &perDay
	}
	a, err := n.core.PaymentAccounts.Create(context.Background(), owner, "node", in)
	if err != nil {
		n.t.Fatal(err)
	}
	return a.Address
}

// invoke invokes agentID as the owner with message "hello" and input.
func (n *snNode) invoke(agentID, input string, edit ...func(*commands.InvokeInput)) (commands.InvokeResult, error) {
	in := commands.InvokeInput{Message: ptr("hello")}
	if input != "" {
		in.Input = json.RawMessage(input)
	}
	for _, e := range edit {
		e(&in)
	}
	return n.sn.Invoke(context.Background(), owner, agentID, in)
}

// events returns every event after seq from, in order.
func (n *snNode) events(from uint64) []*eventlog.Event {
	n.t.Helper()
	var out []*eventlog.Event
	if err := n.log.Scan(from+1, n.log.Tip().Seq, func(ev *eventlog.Event) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		n.t.Fatal(err)
	}
	return out
}

// ofType returns the events of typ after seq from.
func (n *snNode) ofType(from uint64, typ string) []*eventlog.Event {
	var out []*eventlog.Event
	for _, ev := range n.events(from) {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// types lists the types of the events after seq from.
func (n *snNode) types(from uint64) []string {
	var out []string
	for _, ev := range n.events(from) {
		out = append(out, ev.Type)
	}
	return out
}

// refused checks that err is the command error kind/code/field and that the
// log's tip has not moved from tip.
func (n *snNode) refused(err error, tip uint64, kind commands.Kind, code, field string) *commands.Error {
	n.t.Helper()
	var ce *commands.Error
	if !errors.As(err, &ce) {
		n.t.Fatalf("err = %v, want a *commands.Error %s", err, code)
	}
	if ce.Kind != kind || ce.Code != code || ce.Field != field {
		n.t.Errorf("err = kind %d code %q field %q (%s), want kind %d code %q field %q",
			ce.Kind, ce.Code, ce.Field, ce.Message, kind, code, field)
	}
	if got := n.log.Tip().Seq; got != tip {
		n.t.Errorf("tip moved from %d to %d on a refused call: %v", tip, got, n.types(tip))
	}
	return ce
}

// noSecret fails the test when secret appears in any event, audit entry or
// log line of the node.
func (n *snNode) noSecret(secret string) {
	n.t.Helper()
	for _, ev := range n.events(0) {
		if bytes.Contains(ev.Raw(), []byte(secret)) {
			n.t.Errorf("event %d (%s) holds the secret: %s", ev.Seq, ev.Type, ev.Raw())
		}
	}
	audit, err := n.log.AuditEntries(eventlog.AuditQuery{Limit: 1000})
	if err != nil {
		n.t.Fatal(err)
	}
	for _, e := range audit {
		b, _ := json.Marshal(e)
		if bytes.Contains(b, []byte(secret)) {
			n.t.Errorf("audit entry %s holds the secret: %s", e.Action, b)
		}
	}
	if strings.Contains(n.logs.String(), secret) {
		n.t.Errorf("the node's log holds the secret:\n%s", n.logs.String())
	}
}

// payloadOf decodes ev's payload.
func payloadOf[T any](t *testing.T, ev *eventlog.Event) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(ev.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("payload of %s: %v: %s", ev.Type, err, ev.Payload)
	}
	return v
}

// canonicalSHA256 is hex SHA-256 of the RFC 8785 form of the JSON raw,
// computed independently of the commands.
func canonicalSHA256(t *testing.T, raw string) string {
	t.Helper()
	b, err := eventlog.CanonicalObject([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// countingKeys is the local keystore, counting the signatures its wallets
// make: "nothing is signed" is then a count, not an inference.
type countingKeys struct {
	*servicenet.Keystore
	signs atomic.Int32
	// fail makes every signature fail, as a remote signer that is down.
	fail atomic.Bool
}

func (k *countingKeys) Wallet(ref string) (servicenet.Wallet, error) {
	w, err := k.Keystore.Wallet(ref)
	if err != nil {
		return nil, err
	}
	return countingWallet{w, &k.signs, &k.fail}, nil
}

type countingWallet struct {
	servicenet.Wallet
	signs *atomic.Int32
	fail  *atomic.Bool
}

func (w countingWallet) SignTransferAuthorization(ctx context.Context, a servicenet.TransferAuthorization) ([]byte, error) {
	if w.fail.Load() {
		return nil, errors.New("the signer is unavailable")
	}
	w.signs.Add(1)
	return w.Wallet.SignTransferAuthorization(ctx, a)
}

type snLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *snLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *snLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServicenetListAndCard(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "echo", Name: "Echo", Description: "Says it back",
		InputSchema: json.RawMessage(`{"type":"object"}`)})
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 1}})
	n.reg.Add(servicenettest.Agent{ID: "oauth", SecuritySchemes: json.RawMessage(snSchemes)})
	tip := n.log.Tip().Seq

	agents, err := n.sn.Agents(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	want := []servicenet.Summary{
		{AgentID: "echo", Name: "Echo", Description: "Says it back"},
		{AgentID: "paid", Name: "paid", RequiresPayment: true},
		{AgentID: "oauth", Name: "oauth", RequiresOAuth: true},
	}
	if len(agents) != len(want) {
		t.Fatalf("agents = %+v", agents)
	}
	for i := range want {
		if agents[i] != want[i] {
			t.Errorf("agents[%d] = %+v, want %+v", i, agents[i], want[i])
		}
	}
	card, err := n.sn.Card(context.Background(), agentActor("did:key:z6MkAgent"), "paid")
	if err != nil {
		t.Fatal(err)
	}
	if !card.Paid() || card.RequiresOAuth || !strings.Contains(string(card.Pricing), `"rail":"x402"`) {
		t.Errorf("card = %+v pricing %s", card, card.Pricing)
	}
	if got := n.log.Tip().Seq; got != tip {
		t.Errorf("reads appended events: %v", n.types(tip))
	}
	// Every request carried the node's credential, checked by the fake, and
	// never an Authorization other than the registry credential.
	for _, q := range n.reg.Requests() {
		if q.Header.Get("Authorization") != "Bearer "+snCredential {
			t.Errorf("%s %s: Authorization %q", q.Method, q.Path, q.Header.Get("Authorization"))
		}
	}
	for _, a := range []commands.Actor{observer, {}} {
		_, err := n.sn.Agents(context.Background(), a)
		n.refused(err, tip, commands.KindForbidden, "forbidden", "")
		_, err = n.sn.Card(context.Background(), a, "echo")
		n.refused(err, tip, commands.KindForbidden, "forbidden", "")
		_, err = n.sn.Invoke(context.Background(), a, "echo", commands.InvokeInput{Message: ptr("x")})
		n.refused(err, tip, commands.KindForbidden, "forbidden", "")
		_, err = n.sn.Task(context.Background(), a, "echo", "t1")
		n.refused(err, tip, commands.KindForbidden, "forbidden", "")
		_, err = n.sn.Receipt(context.Background(), a, "r1")
		n.refused(err, tip, commands.KindForbidden, "forbidden", "")
	}
}

// snSchemes is an OAuth 2 security scheme as A2A cards carry it.
const snSchemes = `{"oauth":{"type":"oauth2","flows":{"authorizationCode":{
	"authorizationUrl":"https://auth.example.com/authorize","tokenUrl":"https://auth.example.com/token",
	"refreshUrl":"https://auth.example.com/refresh","scopes":{"write":"Write","read":"Read"}}}}}`
