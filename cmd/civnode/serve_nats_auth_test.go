package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// serve --nats-listen takes the node's tokens, as HTTP does: without one, or
// with a wrong one, a client is refused at connect; an observer token
// (created over HTTP) follows the events, as the password of any user; once
// revoked, its connection is closed within about a second.
func TestServeNATSPortTakesNodeTokens(t *testing.T) {
	n := startNodeArgs(t, t.TempDir(), "--nats-listen", "127.0.0.1:0")
	var ns struct {
		NATS struct {
			Listen string `json:"listen"`
		} `json:"nats"`
	}
	getJSON(t, n.url+"/v1/client/network/status", n.token, 200, &ns)
	var st stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)
	addr := "nats://" + ns.NATS.Listen

	for name, opts := range map[string][]nats.Option{
		"no token":      nil,
		"a wrong token": {nats.Token("cvn_not-a-token")},
	} {
		nc, err := nats.Connect(addr, append(opts, nats.NoReconnect())...)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected; want refused", name)
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("%s: %v, want %v", name, err, nats.ErrAuthorization)
		}
	}

	var obs struct {
		ID    string `json:"token_id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(postOK(t, n.url, n.token, "/v1/admin/tokens", `{"kind":"observer"}`), &obs); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(addr, nats.UserInfo("x", obs.Token), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatalf("observer token: %v", err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("civnode." + st.Identity.NodeDID + ".events.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	postOK(t, n.url, n.token, "/v1/core/missions", missionBody(1))
	m, err := sub.NextMsg(waitTimeout)
	if err != nil {
		t.Fatalf("observer on the port: no event: %v", err)
	}
	if !strings.Contains(string(m.Data), `"mission.created"`) {
		t.Fatalf("observer on the port got %.300s, want the mission.created event", m.Data)
	}
	// The owner token is taken too.
	owner, err := nats.Connect(addr, nats.Token(n.token), nats.NoReconnect())
	if err != nil {
		t.Fatalf("owner token: %v", err)
	}
	owner.Close()

	revoked := time.Now()
	postOK(t, n.url, n.token, "/v1/admin/tokens/"+obs.ID+"/revoke", `{}`)
	select {
	case <-closed:
	case <-time.After(waitTimeout):
		t.Fatalf("the revoked token's connection is still open after %v", waitTimeout)
	}
	// A second is the promise; the bound leaves room for a loaded machine.
	if took := time.Since(revoked); took > 5*time.Second {
		t.Fatalf("the revoked token's connection closed after %v", took)
	}
	if nc, err := nats.Connect(addr, nats.Token(obs.Token), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a revoked token connected")
	}
	if strings.Contains(n.stderr.String(), obs.Token) {
		t.Fatal("the observer token is in the log")
	}
}
