package main

import (
	"crypto/tls"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/internal/testcert"
)

// serve --nats-tls-cert/--nats-tls-key: the NATS port speaks TLS, and nats.go
// trusting the CA, with a node token, follows the events over it.
func TestServeNATSPortTLS(t *testing.T) {
	ca := testcert.NewCA(t, "nats test CA")
	certFile, keyFile := ca.Server(t).Write(t, t.TempDir(), "nats")
	n := startNodeArgs(t, t.TempDir(), "--nats-listen", "127.0.0.1:0", "--nats-tls-cert", certFile, "--nats-tls-key", keyFile)
	var ns struct {
		NATS struct {
			Listen string `json:"listen"`
		} `json:"nats"`
	}
	getJSON(t, n.url+"/v1/client/network/status", n.token, 200, &ns)
	var st stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)

	nc, err := nats.Connect("tls://"+ns.NATS.Listen, nats.Token(n.token), nats.NoReconnect(),
		nats.Secure(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatalf("nats.go over TLS: %v", err)
	}
	defer nc.Close()
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Fatalf("not a TLS connection: %v", err)
	}
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
		t.Fatalf("over TLS: no event: %v", err)
	}
	if !strings.Contains(string(m.Data), `"mission.created"`) {
		t.Fatalf("over TLS got %.300s, want the mission.created event", m.Data)
	}
	// Without trusting the CA: the handshake fails.
	if other, err := nats.Connect("tls://"+ns.NATS.Listen, nats.Token(n.token), nats.NoReconnect()); err == nil {
		other.Close()
		t.Fatal("a client that does not trust the node's CA connected")
	}
}

// SIGHUP makes serve load the NATS port's pair again, though its files look
// unchanged to the poll (the same sizes and modification times).
func TestServeNATSPortTLSReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA := testcert.NewCA(t, "old CA"), testcert.NewCA(t, "new CA")
	old := oldCA.Server(t)
	certFile, keyFile := old.Write(t, dir, "nats")
	p := startProcess(t, t.TempDir(), "--nats-listen", "127.0.0.1:0", "--nats-tls-cert", certFile, "--nats-tls-key", keyFile)
	var ns struct {
		NATS struct {
			Listen string `json:"listen"`
		} `json:"nats"`
	}
	getJSON(t, p.url+"/v1/client/network/status", p.token, 200, &ns)
	connect := func(ca *testcert.CA) error {
		nc, err := nats.Connect("tls://"+ns.NATS.Listen, nats.Token(p.token), nats.NoReconnect(),
			nats.Secure(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}))
		if err == nil {
			nc.Close()
		}
		return err
	}
	var stamps []time.Time
	for _, f := range []string{certFile, keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, fi.ModTime())
	}
	var next testcert.Pair
	for i := 0; ; i++ {
		next = newCA.Server(t)
		if len(next.CertPEM) == len(old.CertPEM) && len(next.KeyPEM) == len(old.KeyPEM) {
			break
		}
		if i == 200 {
			t.Fatal("no pair of the old one's sizes in 200 tries")
		}
	}
	next.Write(t, dir, "nats")
	for i, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, stamps[i], stamps[i]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	if err := connect(oldCA); err != nil {
		t.Fatalf("before SIGHUP: %v, want the old pair served", err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for connect(newCA) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the new pair is not served after SIGHUP\nstderr:\n%s", p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := connect(newCA); err != nil {
		t.Fatal(err)
	}
}
