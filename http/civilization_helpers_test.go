package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// civNode is a node wired as cmd/civnode wires it: an in-memory log whose read
// model follows commits (OnCommit) and whose decision model follows the sequencer
// (OnSequenced), both rebuilt after Open, the identity commands over the decision
// model, the token service resolving public ids through the read model, and the
// server reading the read model.
type civNode struct {
	*testNode
	key    ed25519.PrivateKey
	read   *projections.Identities
	decide *projections.Identities
	cmd    *commands.Identity
	tokens *commands.Tokens
	// The missions read and decision models and commands, wired the same way.
	mread   *projections.Missions
	mdecide *projections.Missions
	mcmd    *commands.Mission
	// The game read and decision models and commands, wired the same way.
	gread   *projections.Game
	gdecide *projections.Game
	gcmd    *commands.Game
}

func newCivNode(t *testing.T) *civNode {
	t.Helper()
	return newCivNodeWith(t, nil)
}

// newCivNodeWith is newCivNode with the log's options adjusted first (a data
// directory in place of memory, a clock).
func newCivNodeWith(t *testing.T, edit func(*eventlog.Options)) *civNode {
	t.Helper()
	n := &civNode{key: ed25519.NewKeyFromSeed(testSeed),
		read: projections.NewIdentities(), decide: projections.NewIdentities(),
		mread: projections.NewMissions(), mdecide: projections.NewMissionDecisions(),
		gread: projections.NewGame(), gdecide: projections.NewGame()}
	opts := eventlog.Options{InMemory: true, Key: n.key, Logger: discardLogger(),
		OnCommit: func(evs []eventlog.Event) {
			n.read.ApplyEvents(evs)
			n.mread.ApplyEvents(evs)
			n.gread.ApplyEvents(evs)
		},
		OnSequenced: func(evs []eventlog.Event) {
			n.decide.ApplyEvents(evs)
			n.mdecide.ApplyEvents(evs)
			n.gdecide.ApplyEvents(evs)
		}}
	if edit != nil {
		edit(&opts)
	}
	l, err := eventlog.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	// As cmd does: one scan rebuilds both models before any write.
	if err := projections.Rebuild(context.Background(), l, n.read, n.decide, n.mread, n.mdecide, n.gread, n.gdecide); err != nil {
		t.Fatal(err)
	}
	if n.mcmd, err = commands.NewMission(commands.MissionOptions{Log: l, Missions: n.mdecide,
		Identities: n.decide, Profiles: n.decide}); err != nil {
		t.Fatal(err)
	}
	if n.gcmd, err = commands.NewGame(commands.GameOptions{Log: l, Mission: n.mcmd, Game: n.gdecide}); err != nil {
		t.Fatal(err)
	}
	if n.cmd, err = commands.NewIdentity(commands.IdentityOptions{Log: l, NodeKey: n.key,
		Identities: n.decide, Controllers: n.decide}); err != nil {
		t.Fatal(err)
	}
	if n.tokens, err = commands.NewTokens(commands.TokensOptions{Store: l, Auditor: l,
		Identities: n.read, NodeDID: l.NodeDID()}); err != nil {
		t.Fatal(err)
	}
	n.testNode = n.serve(t, l, n.read)
	return n
}

// serve starts a server over log with the read model read.
func (n *civNode) serve(t *testing.T, l *eventlog.Log, read *projections.Identities) *testNode {
	t.Helper()
	return n.serveWith(t, l, read, n.mread)
}

// serveWith starts a server over log with the read models read and missions.
func (n *civNode) serveWith(t *testing.T, l *eventlog.Log, read *projections.Identities, missions *projections.Missions) *testNode {
	t.Helper()
	return n.serveModels(t, l, read, missions, n.gread)
}

// serveModels starts a server over log with the read models read, missions
// and game.
func (n *civNode) serveModels(t *testing.T, l *eventlog.Log, read *projections.Identities, missions *projections.Missions, game *projections.Game) *testNode {
	t.Helper()
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger(),
		Identity: n.cmd, Identities: read, Tokens: n.tokens, Mission: n.mcmd, Missions: missions,
		Game: n.gcmd, GameState: game, Governs: []string{"genesis"}})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &testNode{t: t, log: l, srv: s, url: hs.URL}
}

// agentToken issues a real agent token acting for publicID, as
// `civnode token create --acts-for` does.
func (n *civNode) agentToken(publicID string) string {
	n.t.Helper()
	tok, err := n.tokens.Create(context.Background(), commands.Actor{TokenID: "owner", Kind: commands.ActorOwner}, commands.TokenKindAgent, publicID)
	if err != nil {
		n.t.Fatal(err)
	}
	return tok.Secret
}

// observerToken issues a real observer token.
func (n *civNode) observerToken() string {
	n.t.Helper()
	tok, err := n.tokens.Create(context.Background(), commands.Actor{TokenID: "owner", Kind: commands.ActorOwner}, commands.TokenKindObserver, "")
	if err != nil {
		n.t.Fatal(err)
	}
	return tok.Secret
}

// civSend makes a request with token; body is a string sent as is, or a value sent
// as JSON.
func (n *testNode) civSend(method, path, token string, body any) response {
	n.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			n.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	return n.request(method, path, token, r)
}

// civPost sends a JSON body with the owner token.
func (n *testNode) civPost(path string, body any) response {
	n.t.Helper()
	return n.civSend(http.MethodPost, path, testToken, body)
}

// wantOK checks a 200 and decodes the body into v (if not nil).
func (r response) wantOK(t *testing.T, v any) response {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %s)", r.status, r.body)
	}
	if v != nil {
		r.decode(t, v)
	}
	return r
}

// bootstrap registers an identity through the API as the owner.
func (n *civNode) bootstrap(body map[string]any) (did, slug string) {
	n.t.Helper()
	var got struct {
		AgentDID string `json:"agent_did"`
		PublicID string `json:"public_id"`
	}
	n.civPost("/v1/civilization/bootstrap-identity", body).wantOK(n.t, &got)
	return got.AgentDID, got.PublicID
}

// jsonKeys returns the top-level keys of a JSON object in document order.
func jsonKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", body)
	}
	var out []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
