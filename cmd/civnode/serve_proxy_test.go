package main

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestServeTrustedProxyFlag: --trusted-proxy takes CIDRs and bare IPs, which
// are one address each, and refuses anything else.
func TestServeTrustedProxyFlag(t *testing.T) {
	cfg := serveConfig{trustedProxies: []string{"10.1.2.3/8", "192.0.2.1", "2001:db8::1", "fd00::/8"}}
	got, err := cfg.httpTrustedProxies()
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"),
		netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("fd00::/8")}
	if !slices.Equal(got, want) {
		t.Errorf("prefixes = %v, want %v", got, want)
	}
	for _, bad := range []string{"proxy.example", "10.0.0.0/33", ""} {
		cfg := serveConfig{trustedProxies: []string{bad}}
		if _, err := cfg.httpTrustedProxies(); err == nil {
			t.Errorf("--trusted-proxy %q accepted", bad)
		}
	}
}

// TestServePublicURLFlag: --public-url must be an http or https URL.
func TestServePublicURLFlag(t *testing.T) {
	for url, ok := range map[string]bool{"https://node.example.com": true, "http://10.0.0.1:7777/civ": true,
		"node.example.com": false, "ftp://node.example.com": false, "https://node.example.com/?a=1": false} {
		cfg := serveConfig{publicURL: url, rateLimit: 1, natsMaxPending: 1 << 30, pageBytes: 1, witnessStartWait: 1,
			publishInterval: 1, modelCache: 1 << 20, witnessQuorum: 1, stateInterval: time.Second}
		if err := cfg.check(); (err == nil) != ok {
			t.Errorf("--public-url %q: %v", url, err)
		}
	}
}
