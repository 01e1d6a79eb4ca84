package http

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/stream/streamtest"
)

// Without NATS the network status says so, and /v1/stream does not exist.
func TestNetworkStatusWithoutNATS(t *testing.T) {
	n := newTestNode(t)
	r := n.get("/v1/client/network/status")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := `{"nats":{"enabled":false},"leafs":[],"stream_clients":0,"slow_consumer_drops":0,"published":0,"publish_errors":0}`
	if got := strings.TrimSpace(string(r.body)); got != want {
		t.Errorf("body %s\nwant %s", got, want)
	}
	n.get("/v1/stream").wantError(t, http.StatusNotFound, "not_found", "")
}

// With the embedded server: the server, its subjects, the stream clients; the
// state's network object summarises it. Observers may not read it.
func TestNetworkStatus(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{})
	n.dialOwner(t, "")
	n.dialOwner(t, "?type=mission.*")
	n.appendEvents("test.x")

	var st struct {
		NATS struct {
			Enabled     bool   `json:"enabled"`
			ServerID    string `json:"server_id"`
			Version     string `json:"version"`
			Listen      string `json:"listen"`
			Connections int    `json:"connections"`
			Started     string `json:"started"`
			Subjects    struct {
				Events  string `json:"events"`
				Exports string `json:"exports"`
			} `json:"subjects"`
		} `json:"nats"`
		Leafs             []stream.LeafStatus `json:"leafs"`
		StreamClients     int                 `json:"stream_clients"`
		SlowConsumerDrops uint64              `json:"slow_consumer_drops"`
		Published         uint64              `json:"published"`
	}
	n.get("/v1/client/network/status").decode(t, &st)
	did := n.log.NodeDID()
	if !st.NATS.Enabled || st.NATS.ServerID == "" || st.NATS.Version == "" || st.NATS.Listen != "" ||
		st.NATS.Started == "" || st.NATS.Connections < 2 {
		t.Errorf("nats = %+v", st.NATS)
	}
	if st.NATS.Subjects.Events != "civnode."+did+".events.>" || st.NATS.Subjects.Exports != "civnode."+did+".exports" {
		t.Errorf("subjects = %+v", st.NATS.Subjects)
	}
	if st.Leafs == nil || len(st.Leafs) != 0 || st.StreamClients != 2 || st.SlowConsumerDrops != 0 || st.Published < 1 {
		t.Errorf("status = %+v", st)
	}

	var state struct {
		Network json.RawMessage `json:"network"`
	}
	n.get("/v1/state").decode(t, &state)
	var nw struct {
		Status  string         `json:"status"`
		Peers   int            `json:"peers"`
		NATS    map[string]any `json:"nats"`
		Details string         `json:"details"`
	}
	if err := json.Unmarshal(state.Network, &nw); err != nil {
		t.Fatal(err)
	}
	if nw.Status != "online" || nw.Peers != 0 || nw.NATS["enabled"] != true || nw.NATS["server_id"] != st.NATS.ServerID ||
		nw.Details != "/v1/client/network/status" {
		t.Errorf("state network = %s", state.Network)
	}

	obs := issue(t, n.tokens, "observer", "")
	n.request(http.MethodGet, "/v1/client/network/status", obs.Secret, nil).wantError(t, http.StatusForbidden, "forbidden", "")
}

// With a leaf link to a real, separate nats-server: the link shows in the
// status and as a peer in the state, and a broken link makes the state
// degraded.
func TestNetworkStatusLeafLink(t *testing.T) {
	hub := streamtest.StartHub(t)
	n := newStreamNode(t, streamNodeConfig{stream: stream.Options{LeafURL: hub.LeafURL, LeafPoll: 20 * time.Millisecond}})
	network := func() (networkStatus, stateNetwork) {
		var st networkStatus
		n.get("/v1/client/network/status").decode(t, &st)
		var state struct {
			Network stateNetwork `json:"network"`
		}
		n.get("/v1/state").decode(t, &state)
		return st, state.Network
	}
	waitFor(t, "the leaf link to come up", func() bool {
		st, _ := network()
		return len(st.Leafs) == 1 && st.Leafs[0].Connected
	})
	st, sn := network()
	if remote := strings.TrimPrefix(hub.LeafURL, "nats://"); st.Leafs[0].Remote != remote {
		t.Errorf("leaf remote = %q, want %q", st.Leafs[0].Remote, remote)
	}
	if sn.Status != "online" || sn.Peers != 1 {
		t.Errorf("state network = %+v, want online with 1 peer", sn)
	}
	remote := strings.TrimPrefix(hub.LeafURL, "nats://")
	leafMetrics := func() (up, since float64) {
		fams, _ := scrape(t, n.testNode, testToken)
		up = sample(t, fams, "civnode_nats_leaf_up", map[string]string{"remote": remote}).GetGauge().GetValue()
		since = sample(t, fams, "civnode_nats_leaf_last_change_timestamp_seconds", map[string]string{"remote": remote}).GetGauge().GetValue()
		return up, since
	}
	up, upSince := leafMetrics()
	if up != 1 || upSince != float64(st.Leafs[0].Since.UnixNano())/1e9 {
		t.Errorf("leaf metrics while up: up %v since %v, want 1 and %v", up, upSince, st.Leafs[0].Since)
	}
	hub.Stop()
	waitFor(t, "the leaf link to go down", func() bool {
		st, _ := network()
		return len(st.Leafs) == 1 && !st.Leafs[0].Connected
	})
	if _, sn := network(); sn.Status != "degraded" || sn.Peers != 0 {
		t.Errorf("state network = %+v, want degraded with 0 peers", sn)
	}
	if up, since := leafMetrics(); up != 0 || since <= upSince {
		t.Errorf("leaf metrics while down: up %v since %v, want 0 and after %v", up, since, upSince)
	}
}

// Every sealed export is announced on civnode.<node>.exports with the bundle's
// own seal, and audited as export.sealed.
func TestExportNotice(t *testing.T) {
	const portToken = "port-observer-token"
	n := newStreamNode(t, streamNodeConfig{stream: stream.Options{Listen: "127.0.0.1:0",
		Authenticate: func(tok string) (string, bool) { return "observer", tok == portToken }}})
	n.appendEvents("test.x", "test.y")
	nc, err := nats.Connect("nats://"+n.st.Status().NATS.Listen, nats.Timeout(waitDeadline), nats.Token(portToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(stream.ExportsSubject(n.log.NodeDID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := n.get("/v1/events/export")
		var bundle stream.ExportNotice // the bundle's fields of the same names
		r.decode(t, &bundle)
		m, err := sub.NextMsg(waitDeadline)
		if err != nil {
			t.Fatal(err)
		}
		var notice stream.ExportNotice
		if err := json.Unmarshal(m.Data, &notice); err != nil {
			t.Fatal(err)
		}
		if notice != bundle || notice.ExportID == "" || notice.BundleSignature == "" || notice.EventCount != 3 {
			t.Errorf("notice %+v\nbundle %+v", notice, bundle)
		}
	}
	waitFor(t, "the export.sealed audit entries", func() bool { return len(n.auditEntries("export.sealed")) == 2 })
}
