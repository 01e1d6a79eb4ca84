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

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// civNode is a node wired as cmd/civnode wires it, through the same core.Open:
// a log folding every event into the read models, the commands over their
// decision views, the token service, and a server over the durable queries.
type civNode struct {
	*testNode
	core   *core.Core
	key    ed25519.PrivateKey
	read   *projections.Identities
	mread  *projections.Missions
	gread  *projections.Game
	cmd    *commands.Identity
	mcmd   *commands.Mission
	gcmd   *commands.Game
	tokens *commands.Tokens
}

func newCivNode(t *testing.T) *civNode {
	t.Helper()
	return newCivNodeWith(t, nil)
}

// newCivNodeWith is newCivNode with the log's options adjusted first (a data
// directory in place of memory, a clock).
func newCivNodeWith(t *testing.T, edit func(*eventlog.Options)) *civNode {
	t.Helper()
	return newCivNodeServing(t, edit, nil)
}

// newCivNodeServing is newCivNodeWith with the server's options adjusted too.
func newCivNodeServing(t *testing.T, edit func(*eventlog.Options), serve func(*Options)) *civNode {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	opts := eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()}
	if edit != nil {
		edit(&opts)
	}
	// The server's options are settled first: the commands govern what it does.
	sopts := Options{OwnerToken: testToken, Logger: discardLogger(), Governs: []string{"genesis"}}
	if serve != nil {
		serve(&sopts)
	}
	c, err := core.Open(opts, core.Config{Catalog: sopts.Catalog, Governs: sopts.Governs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := &civNode{core: c, key: key, read: c.Identities, mread: c.Missions, gread: c.GameState,
		cmd: c.Identity, mcmd: c.Mission, gcmd: c.Game, tokens: c.Tokens}
	s := New(wired(sopts, c))
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	n.testNode = &testNode{t: t, log: c.Log, srv: s, url: hs.URL}
	return n
}

// rebuildInPlace rebuilds every read model from the chain, as civnode replay
// does, and checks that the rebuild found nothing to change and that no model
// skipped an event. The node's server then answers from the rebuilt models.
func (n *civNode) rebuildInPlace(t *testing.T) {
	t.Helper()
	diff, err := n.log.RebuildModels(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Same() {
		t.Errorf("the live models differ from a rebuild from the chain: %+v", diff)
	}
	skipped, err := n.core.Skipped()
	if err != nil {
		t.Fatal(err)
	}
	for model, k := range skipped {
		if k != 0 {
			t.Errorf("%s model skipped %d events", model, k)
		}
	}
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
