package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
