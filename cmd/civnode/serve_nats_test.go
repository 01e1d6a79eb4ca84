package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/stream/streamtest"
)

// serve --nats-leaf joins a real, separate nats-server as a leaf node and
// records the link on its chain: peer.connected when it comes up,
// peer.disconnected when the hub goes away, never with the URL's password.
func TestServeNATSLeafRecordsPeerEvents(t *testing.T) {
	hub := streamtest.StartHub(t)
	dir := t.TempDir()
	leaf := strings.Replace(hub.LeafURL, "nats://", "nats://observer:hunter2@", 1)
	n := startNodeArgs(t, dir, "--nats-leaf", leaf, "--nats-listen", "127.0.0.1:0")
	hubAddr := strings.TrimPrefix(hub.LeafURL, "nats://")

	peerEvent := func(typ string) map[string]any {
		t.Helper()
		var body eventsBody
		deadline := time.Now().Add(waitTimeout)
		for {
			getJSON(t, n.url+"/v1/events?type="+typ, n.token, 200, &body)
			if len(body.Events) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s event within %v\nstderr:\n%s", typ, waitTimeout, n.stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(body.Events) != 1 {
			t.Fatalf("%d %s events, want 1", len(body.Events), typ)
		}
		raw := body.Events[0].Payload
		if strings.Contains(string(raw), "hunter2") || strings.Contains(string(raw), "observer") {
			t.Fatalf("%s payload carries the leaf URL's credentials: %s", typ, raw)
		}
		var p map[string]any
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	up := peerEvent("peer.connected")
	if up["kind"] != "leaf" || up["remote"] != hubAddr || up["name"] == nil {
		t.Fatalf("peer.connected payload %v; want a leaf link to %s with the hub's name", up, hubAddr)
	}

	hub.Stop()
	down := peerEvent("peer.disconnected")
	if down["kind"] != "leaf" || down["remote"] != hubAddr || down["name"] != up["name"] {
		t.Fatalf("peer.disconnected payload %v after %v", down, up)
	}
	n.stop(t)
	logs := n.stderr.String()
	if !strings.Contains(logs, "nats listening") || strings.Contains(logs, "hunter2") {
		t.Fatalf("the logs should say the NATS port is open and never hold the leaf password:\n%s", logs)
	}
}

// By default serve opens no NATS port, and says so.
func TestServeNATSInProcessByDefault(t *testing.T) {
	n := startNode(t, t.TempDir())
	n.stop(t)
	if logs := n.stderr.String(); !strings.Contains(logs, "nats in process only: no listener") {
		t.Fatalf("the logs do not say that no NATS port is open:\n%s", logs)
	}
}

// A message forged at a hub under the node's own subjects never reaches a
// client of the node's own --nats-listen port, and neither does one a port
// client publishes there: with civnode serve running as a process, a leaf of
// a real nats-server, each round publishes a forgery at the hub and one on
// the port, then creates a mission over HTTP, and the first message the
// port's subscriber sees is that mission's signed event, byte for byte as the
// node stored it.
func TestServeNATSForgeriesReachNoPortClient(t *testing.T) {
	hub := streamtest.StartHub(t)
	p := startProcess(t, t.TempDir(), "--nats-leaf", hub.LeafURL, "--nats-listen", "127.0.0.1:0")
	var st stateBody
	getJSON(t, p.url+"/v1/state", p.token, 200, &st)
	did := st.Identity.NodeDID
	var ns struct {
		NATS struct {
			Listen string `json:"listen"`
		} `json:"nats"`
		Leafs []struct {
			Connected bool `json:"connected"`
		} `json:"leafs"`
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		getJSON(t, p.url+"/v1/client/network/status", p.token, 200, &ns)
		if len(ns.Leafs) == 1 && ns.Leafs[0].Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leaf link did not come up\nstderr:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The node records the link as a peer.connected event after its status
	// says connected; wait for it, so that the port client's first message
	// below can only be the mission or a forgery.
	for {
		var peers eventsBody
		getJSON(t, p.url+"/v1/events?type=peer.connected", p.token, 200, &peers)
		if len(peers.Events) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no peer.connected event for the leaf link\nstderr:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}

	hc, err := nats.Connect(hub.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	perm := make(chan error, 100)
	port, err := nats.Connect("nats://"+ns.NATS.Listen, nats.Token(p.token), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		perm <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	sub, err := port.SubscribeSync("civnode." + did + ".events.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Flush(); err != nil {
		t.Fatal(err)
	}
	forged := &nats.Msg{Subject: "civnode." + did + ".events.mission.settled",
		Header: nats.Header{"Civnode-Seq": {"999999"}}, Data: []byte(`{"forged":true}`)}
	for round := range 10 {
		// At the hub: the hub takes it (Flush) and would forward it to any
		// interest the node's side has shown it.
		if err := hc.PublishMsg(forged); err != nil {
			t.Fatal(err)
		}
		if err := hc.Flush(); err != nil {
			t.Fatal(err)
		}
		// On the node's own port: refused.
		if err := port.PublishMsg(forged); err != nil {
			t.Fatal(err)
		}
		_ = port.Flush()
		select {
		case err := <-perm:
			if !errors.Is(err, nats.ErrPermissionViolation) {
				t.Fatalf("round %d: publishing on the port: %v, want a permissions violation", round, err)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: a publication under the node's subject on its own port was not refused", round)
		}

		status, body, err := postStatus(httpClient, p.url+"/v1/core/missions", p.token, []byte(missionBody(round)))
		if err != nil || status != 200 {
			t.Fatalf("round %d: create mission: %d %s %v", round, status, body, err)
		}
		var created struct {
			MissionID string `json:"mission_id"`
		}
		if err := json.Unmarshal(body, &created); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(waitTimeout)
		if err != nil {
			t.Fatalf("round %d: the port client got nothing: %v", round, err)
		}
		var got struct {
			Type, NodeDID, Signature string
			Seq                      uint64
			Payload                  struct {
				MissionID string `json:"mission_id"`
			}
		}
		if err := json.Unmarshal(m.Data, &got); err != nil || got.Type != "mission.created" || got.Payload.MissionID != created.MissionID {
			t.Fatalf("round %d: the port client's first message is %s %q (Civnode-Seq %s), want mission %s created: a forgery got through",
				round, m.Subject, m.Data, m.Header.Get("Civnode-Seq"), created.MissionID)
		}
		var stored struct {
			Events []json.RawMessage `json:"events"`
		}
		getJSON(t, p.url+"/v1/events?type=mission.created&limit=1000", p.token, 200, &stored)
		if len(stored.Events) != round+1 || string(stored.Events[round]) != string(m.Data) || got.Signature == "" ||
			m.Header.Get("Civnode-Seq") != strconv.FormatUint(got.Seq, 10) {
			t.Fatalf("round %d: the port client got %s (Civnode-Seq %s)\nthe node stored %s", round, m.Data, m.Header.Get("Civnode-Seq"), stored.Events[len(stored.Events)-1])
		}
	}
}

// --nats-max-conns and --nats-max-subs reach the NATS port, and values that
// mean nothing are usage errors.
func TestServeNATSLimitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nats-max-conns", "-1"}, {"--nats-max-subs", "-1"}, {"--nats-max-pending", "1048576"},
	} {
		res := runCLI(t, nil, append([]string{"serve", "--data-dir", t.TempDir() + "/x"}, args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, args[0]) {
			t.Errorf("serve %v: code %d, stderr %q; want a usage error naming the flag", args, res.code, res.stderr)
		}
	}
	if natsLimit(0) != -1 || natsLimit(5) != 5 {
		t.Errorf("natsLimit: 0 → %d, 5 → %d; want -1 (none) and 5", natsLimit(0), natsLimit(5))
	}

	n := startNodeArgs(t, t.TempDir(), "--nats-listen", "127.0.0.1:0", "--nats-max-conns", "1", "--nats-max-subs", "1")
	var ns struct {
		NATS struct {
			Listen string `json:"listen"`
		} `json:"nats"`
	}
	getJSON(t, n.url+"/v1/client/network/status", n.token, 200, &ns)
	var st stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)
	errs := make(chan error, 10)
	nc, err := nats.Connect("nats://"+ns.NATS.Listen, nats.Token(n.token), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		errs <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if other, err := nats.Connect("nats://"+ns.NATS.Listen, nats.Token(n.token), nats.NoReconnect()); err == nil {
		other.Close()
		t.Fatal("a second client connected under --nats-max-conns 1")
	}
	for _, typ := range []string{"a", "b"} {
		if _, err := nc.SubscribeSync("civnode." + st.Identity.NodeDID + ".events." + typ); err != nil {
			t.Fatal(err)
		}
	}
	_ = nc.Flush()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrMaxSubscriptionsExceeded) {
			t.Fatalf("a second subscription under --nats-max-subs 1: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("a second subscription under --nats-max-subs 1 was not refused")
	}
}
