package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/internal/testcert"
	"github.com/civnode/civnode/stream/streamtest"
)

// serve --nats-leaf tls://HUB verifies the hub's certificate against the
// system's roots, which SSL_CERT_FILE replaces: a node given the hub's CA
// that way links up, and one without it never does and says why.
func TestServeNATSLeafVerifiesTheHub(t *testing.T) {
	ca := testcert.NewCA(t, "hub test CA")
	dir := t.TempDir()
	certFile, keyFile := ca.Server(t).Write(t, dir, "hub")
	caFile := filepath.Join(dir, "ca.pem")
	testcert.WriteFile(t, caFile, ca.PEM)
	hub := streamtest.StartTLSHub(t, certFile, keyFile)

	trusting := startProcessEnv(t, t.TempDir(), []string{"SSL_CERT_FILE=" + caFile}, "--nats-leaf", hub.LeafURL)
	stranger := startProcess(t, t.TempDir(), "--nats-leaf", hub.LeafURL)
	leafUp := func(p *process) bool {
		var ns struct {
			Leafs []struct {
				Connected bool `json:"connected"`
			} `json:"leafs"`
		}
		getJSON(t, p.url+"/v1/client/network/status", p.token, 200, &ns)
		return len(ns.Leafs) == 1 && ns.Leafs[0].Connected
	}
	waitFor(t, "the leaf link of the node that trusts the hub's CA", func() (bool, string) {
		return leafUp(trusting), trusting.stderr.String()
	})
	waitFor(t, "the node without the hub's CA to say why it has no link", func() (bool, string) {
		return strings.Contains(stranger.stderr.String(), "certificate signed by unknown authority"), stranger.stderr.String()
	})
	if leafUp(stranger) {
		t.Fatalf("a node without the hub's CA linked to it\nstderr:\n%s", stranger.stderr)
	}
}
