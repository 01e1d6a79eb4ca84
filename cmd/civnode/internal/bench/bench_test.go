package bench

import (
	"testing"
	"time"
)

// TestConfigCheck: the command line's mistakes are refused with the flag they
// concern, and --node is normalised to scheme://host:port.
func TestConfigCheck(t *testing.T) {
	ok := Config{Duration: time.Second, HostileDuration: time.Second}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{with(func(c *Config) { c.Token = "x" }), "--token and --token-file go with --node"},
		{with(func(c *Config) { c.Node = "http://127.0.0.1:7777" }), "--node needs the node's owner token: --token or --token-file"},
		{with(func(c *Config) { c.Node, c.Token, c.TokenFile = "http://127.0.0.1:7777", "x", "f" }), "give --token or --token-file, not both"},
		{with(func(c *Config) { c.Node, c.Token = "http://192.0.2.1:7777", "x" }), `--node "http://192.0.2.1:7777": bench loads loopback addresses only`},
		{with(func(c *Config) { c.Node, c.Token = "ftp://127.0.0.1:7777", "x" }), `--node "ftp://127.0.0.1:7777": want http://HOST:PORT or https://HOST:PORT`},
		{with(func(c *Config) { c.Duration = 0 }), "--duration must be more than 0 and at most 10m"},
		{with(func(c *Config) { c.HostileDuration = time.Hour }), "--hostile-duration must be more than 0 and at most 10m"},
		{with(func(c *Config) { c.Events = -1 }), "--events must be 0 or more"},
	} {
		if err := tt.cfg.Check(); err == nil || err.Error() != tt.want {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
	c := with(func(c *Config) { c.Node, c.Token = "http://localhost:7777/v1/", "x" })
	if err := c.Check(); err != nil || c.Node != "http://localhost:7777" {
		t.Errorf("loopback --node: %v, node %q", err, c.Node)
	}
	c = with(func(c *Config) { c.Node, c.Token = "https://127.0.0.1:7777/", "x" })
	if err := c.Check(); err != nil || c.Node != "https://127.0.0.1:7777" {
		t.Errorf("https --node: %v, node %q", err, c.Node)
	}
}
