package stream_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/stream"
)

// listeningSockets counts the TCP sockets of this process that listen, read
// from /proc: the process's socket inodes matched against the kernel's tables.
func listeningSockets(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				n++
			}
		}
	}
	return n
}

// By default the node opens no NATS port: publication and subscriptions are
// in process.
func TestNoListenerByDefault(t *testing.T) {
	before := listeningSockets(t)
	n := newNode(t, stream.Options{})
	if l := n.st.Status().NATS.Listen; l != "" {
		t.Fatalf("Status reports listener %q", l)
	}
	if after := listeningSockets(t); after != before {
		t.Fatalf("listening TCP sockets went from %d to %d", before, after)
	}
	// And it works without one.
	sub, err := n.st.Subscribe("", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	n.appendN(t, "test.in_process", 2)
	receive(t, sub, 2)
}

// With Listen, a NATS client over TCP follows the node's events, with the seq
// header, and may not publish on the node's subjects: what it tries never
// reaches the node's own subscribers.
func TestListenServesNATSClients(t *testing.T) {
	before := listeningSockets(t)
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	addr := n.st.Status().NATS.Listen
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Status reports listener %q", addr)
	}
	if after := listeningSockets(t); after != before+1 {
		t.Fatalf("listening TCP sockets went from %d to %d, want one more", before, after)
	}
	nc, err := nats.Connect(n.url(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ch := make(chan *nats.Msg, 100)
	if _, err := nc.ChanSubscribe("civnode."+n.did+".events.>", ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	inproc, err := n.st.Subscribe("", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()

	// A forgery, processed by the server (Flush) before the real event.
	forged := stream.EventSubject(n.did, "mission.created")
	if err := nc.PublishMsg(&nats.Msg{Subject: forged, Header: nats.Header{stream.HeaderSeq: {"999"}}, Data: []byte(`{"forged":true}`)}); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()

	evs := n.appendN(t, "test.over_tcp", 3)
	for i, ev := range evs {
		select {
		case m := <-ch:
			if m.Subject != stream.EventSubject(n.did, "test.over_tcp") || string(m.Data) != string(ev.Raw()) ||
				m.Header.Get(stream.HeaderSeq) != strconv.FormatUint(ev.Seq, 10) {
				t.Fatalf("message %d: %s seq %q %s; want seq %d %s", i, m.Subject, m.Header.Get(stream.HeaderSeq), m.Data, ev.Seq, ev.Raw())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("TCP client got %d of %d events", i, len(evs))
		}
	}
	got := receive(t, inproc, 3)
	if got[0].Seq != evs[0].Seq {
		t.Fatalf("in-process subscriber's first message is seq %d (%s), want %d: a forgery got through", got[0].Seq, got[0].Raw, evs[0].Seq)
	}
	if st := n.st.Status(); st.NATS.Connections < 3 || st.NATS.ServerID == "" || st.NATS.Version == "" {
		t.Fatalf("status %+v", st.NATS)
	}
}

// Start fails, and says why, when the NATS port is taken.
func TestListenAddressInUse(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	_, err := stream.Start(stream.Options{NodeDID: "did:key:zOther", Listen: n.st.Status().NATS.Listen, Authenticate: testTokens.check})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Start on a taken port: %v", err)
	}
}

// Every sealed export is announced on civnode.<node>.exports.
func TestExportNotice(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	nc, err := nats.Connect(n.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(stream.ExportsSubject(n.did))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	want := stream.ExportNotice{
		ExportID: "0190a3c2-0000-7000-8000-000000000001", NodeDID: n.did,
		ChainRootHash: strings.Repeat("a", 64), ChainTipHash: strings.Repeat("b", 64),
		EventCount: 42, GeneratedAt: "2026-11-23T10:00:00.000000Z", BundleSignature: "c2ln",
	}
	n.st.PublishExport(want)
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got stream.ExportNotice
	if err := json.Unmarshal(m.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("notice %+v, want %+v", got, want)
	}
	for _, key := range []string{"export_id", "node_did", "chain_root_hash", "chain_tip_hash", "event_count", "generated_at", "bundle_signature"} {
		if !strings.Contains(string(m.Data), `"`+key+`":`) {
			t.Errorf("notice lacks %q: %s", key, m.Data)
		}
	}
}
