package main

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/witness"
)

// serveConfig is the command line of serve (civnode serve --help).
type serveConfig struct {
	dataDir string
	addr    string
	governs []string
	catalog string // game catalog file; "" is the built-in catalog
	// pageBytes is the byte budget of one page of a list response.
	pageBytes int
	// responseBudget bounds the response bytes held at once, over every
	// request; 0: civhttp.DefaultResponseBudgetPages × pageBytes.
	responseBudget int64
	// rateLimit is each token's requests a second on the rate-limited routes,
	// rateBurst the requests it may make at once; 0: no limit, 2 × rateLimit.
	rateLimit float64
	rateBurst int
	// maxConns caps the connections served at once; 0: no cap.
	maxConns int
	// maxConnsPerAddr caps those of one client address; 0: no cap.
	maxConnsPerAddr int
	// natsListen opens a NATS client port; "" none (in-process only).
	natsListen string
	// natsTLSCert and natsTLSKey make the NATS port speak TLS; "" plain.
	natsTLSCert, natsTLSKey string
	// natsLeaf joins a NATS server or cluster as a leaf node; "" none.
	natsLeaf string
	// natsMaxConns and natsMaxSubs cap the NATS port's clients and each
	// one's subscriptions (0: no cap of the node's); natsMaxPending is the
	// bytes queued for one NATS client before it is cut off.
	natsMaxConns, natsMaxSubs int
	natsMaxPending            int64
	// registryURL is the agent registry the node proxies.
	registryURL string
	// modelCache bounds the read models' write-through cache, in bytes.
	modelCache int64
	// witnesses (VKEY@URL) cosign the node's checkpoints, witnessQuorum of
	// them make one witnessed; witnessFor are the verifier keys of the logs
	// this node witnesses (docs/transparency.md, Witnessing).
	witnesses     []string
	witnessQuorum int
	witnessFor    []string
	// published are where the node's chain is published (directories or
	// URLs): the fork guard compares the chain with them and catches up
	// from them; witnessStartWait bounds the guard's wait for the
	// witnesses at a start that was not a recovery (docs/operations.md).
	published        []string
	witnessStartWait time.Duration
	// publishDir is where the node publishes its chain continuously (a
	// directory or s3://BUCKET/PREFIX), every publishInterval.
	publishDir      string
	publishInterval time.Duration
	// stateInterval is the least time between two state.committed events.
	stateInterval time.Duration
	// mirrorOf, when set, serves a mirror of the node published there
	// (mirror_serve.go), verified as mirror verifies it.
	mirrorOf string
	mirror   mirrorFlags
	// tls is the node's HTTPS (--tls-cert, --tls-key, --tls-client-ca) and
	// --allow-plain-http (docs/deploying.md).
	tls localnode.TLS
	// trustedProxies are the --trusted-proxy addresses and networks, whose
	// Forwarded and X-Forwarded-For name a request's client.
	trustedProxies []string
	// publicURL is the address clients use, when it is not --addr.
	publicURL string
}

// serveCmd is civnode serve: its flags, and the node they configure.
type serveCmd struct {
	m   *Main
	g   *globals
	cfg serveConfig
}

func newServeCommand(m *Main, g *globals) *cobra.Command {
	c := &serveCmd{m: m, g: g}
	cfg := &c.cfg
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the node: the control API over the event log",
		Long:  serveHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := m.applyServeSources(cmd.Flags()); err != nil {
				return err
			}
			if err := cfg.check(); err != nil {
				return err
			}
			return c.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.String(configFlag, "", "read settings from the YAML `FILE`: serve's flag names as keys; a flag or a CIVNODE_* variable wins over it (docs/running.md)")
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "listen address HOST:PORT; port 0 picks a free port")
	f.StringSliceVar(&cfg.governs, "governs", []string{"genesis"}, "subnets this node is the governance actor for, comma separated")
	f.IntVar(&cfg.pageBytes, "page-bytes", civhttp.DefaultPageBytes, "byte `BUDGET` of one page of a list response; a page ends before the item that would pass it (docs/limits.md)")
	f.Int64Var(&cfg.responseBudget, "response-budget", 0, "`BYTES` of responses held in memory at once, node-wide; a read over it waits up to 1 s, then is answered 503 busy (default 16 × --page-bytes; docs/limits.md)")
	f.Float64Var(&cfg.rateLimit, "rate-limit", civhttp.DefaultRateLimit, "requests a second each token may make to the write, registry, MCP and event-log routes; over it: 429 with Retry-After (0: no limit; docs/limits.md)")
	f.IntVar(&cfg.rateBurst, "rate-burst", 0, "requests a token may make at once beyond --rate-limit (default 2 × --rate-limit)")
	f.IntVar(&cfg.maxConns, "max-conns", civhttp.DefaultMaxConns, "connections served at once, over TCP and apart on the control socket; one more is answered 503 at once (0: no cap)")
	f.IntVar(&cfg.maxConnsPerAddr, "max-conns-per-addr", civhttp.DefaultMaxConnsPerAddr, "TCP connections one client address (IPv4 address, IPv6 /64) may hold at once; one more is answered 503 at once (0: no cap)")
	f.StringVar(&cfg.catalog, "catalog", "", "game catalog JSON `FILE` (default: the catalog built into the binary; see docs/game.md)")
	f.StringVar(&cfg.natsListen, "nats-listen", "", "open a NATS client port on `HOST:PORT` for observers (default: none, in-process only; port 0 picks a free port)")
	f.StringVar(&cfg.registryURL, "registry-url", localnode.DefaultRegistryURL, "the agent registry the node proxies (`URL`; \"\": none, the registry routes answer 503 registry_not_configured); its credential is <data-dir>/registry.credential")
	f.StringVar(&cfg.natsTLSCert, "nats-tls-cert", "", "serve the --nats-listen port over TLS with the PEM certificate (chain) in `FILE`, reloaded when it changes or on SIGHUP; needs --nats-tls-key (docs/streaming.md)")
	f.StringVar(&cfg.natsTLSKey, "nats-tls-key", "", "the PEM private key of --nats-tls-cert, in `FILE`; reloaded with it")
	f.StringVar(&cfg.natsLeaf, "nats-leaf", "", "join the NATS server or cluster at `URL` (its leafnodes port, nats://host:7422) as a leaf node")
	f.IntVar(&cfg.natsMaxConns, "nats-max-conns", stream.DefaultMaxConns, "clients of the --nats-listen port at once; one more is refused as it connects (0: NATS's own cap, 65,536)")
	f.IntVar(&cfg.natsMaxSubs, "nats-max-subs", stream.DefaultMaxSubs, "subscriptions of one --nats-listen client; one more is refused (0: no cap)")
	f.Int64Var(&cfg.modelCache, "model-cache", eventlog.DefaultModelCacheSize, "`BYTES` of read-model records kept in memory for the write path's decisions and folds (docs/limits.md); at least 1 MiB")
	f.Int64Var(&cfg.natsMaxPending, "nats-max-pending", stream.DefaultMaxPending, "`BYTES` queued for one NATS client before it is cut off as a slow consumer; at least 8 MiB")
	f.StringArrayVar(&cfg.witnesses, "witness", nil, "submit each new checkpoint to the witness `VKEY@URL` (its cosignature/v1 verifier key and base URL; repeatable; docs/transparency.md)")
	f.IntVar(&cfg.witnessQuorum, "witness-quorum", 1, "cosignatures of --witness witnesses that make a checkpoint witnessed")
	f.StringArrayVar(&cfg.witnessFor, "witness-for", nil, "witness the log with the note verifier key `VKEY` at POST /v1/witness/add-checkpoint (repeatable)")
	f.StringArrayVar(&cfg.published, "published", nil, "a `DIR|URL` where the node's chain is published (transparency publish, serve --publish-dir): the node appends nothing while it is behind it, and catches up from it (repeatable; docs/operations.md)")
	f.DurationVar(&cfg.witnessStartWait, "witness-start-wait", localnode.DefaultWitnessStartWait, "how long a start waits for the --witness witnesses to say the chain is not behind them before it appends anyway (a restored, imported or promoted data dir waits for a quorum however long)")
	f.StringVar(&cfg.publishDir, "publish-dir", "", "publish the chain from inside the node to `DIR|s3://BUCKET/PREFIX` as transparency publish does, every --publish-interval (S3: endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION; docs/operations.md)")
	f.DurationVar(&cfg.publishInterval, "publish-interval", localnode.DefaultPublishInterval, "time between two publishes to --publish-dir: the recovery point of a node whose disk is lost")
	f.DurationVar(&cfg.stateInterval, "state-interval", localnode.DefaultStateInterval, "least time between two state.committed events, the node's signed commitments to its records (docs/state-proofs.md)")
	f.StringVar(&cfg.mirrorOf, "mirror-of", "", "follow the node published at `URL` and serve it read-only (see civnode mirror; docs/mirrors.md)")
	f.StringVar(&cfg.tls.CertFile, "tls-cert", "", "serve HTTPS with the PEM certificate (chain) in `FILE`, reloaded when it changes or on SIGHUP; needs --tls-key (docs/deploying.md)")
	f.StringVar(&cfg.tls.KeyFile, "tls-key", "", "the PEM private key of --tls-cert, in `FILE`; reloaded with it")
	f.StringVar(&cfg.tls.ClientCAFile, "tls-client-ca", "", "require client certificates that chain to a CA in the PEM `FILE` (mutual TLS; needs --tls-cert)")
	f.BoolVar(&cfg.tls.AllowPlainHTTP, "allow-plain-http", false, "serve plain HTTP on an --addr that is not loopback (behind a proxy that terminates TLS); warned of at each start")
	f.StringArrayVar(&cfg.trustedProxies, "trusted-proxy", nil, "read the client's address from Forwarded or X-Forwarded-For on connections from the reverse proxy at `CIDR` (a bare IP is one address; repeatable; docs/deploying.md)")
	f.StringVar(&cfg.publicURL, "public-url", "", "the `URL` clients reach the node at (behind a proxy or a name of its own): POST /mcp accepts its Host and Origin, and GET /v1/openapi.json names it as the server (docs/deploying.md)")
	cfg.mirror.add(cmd, "mirror-")
	return cmd
}

// check refuses flag values that mean nothing.
func (cfg serveConfig) check() error {
	switch {
	case cfg.rateLimit < 0 || math.IsNaN(cfg.rateLimit) || math.IsInf(cfg.rateLimit, 0):
		return usageErrorf("--rate-limit must be a number of requests a second, 0 or more (0: no limit)")
	case cfg.rateBurst < 0:
		return usageErrorf("--rate-burst must be 0 or more (0: twice --rate-limit)")
	case cfg.maxConns < 0:
		return usageErrorf("--max-conns must be 0 or more (0: no cap)")
	case cfg.natsMaxConns < 0:
		return usageErrorf("--nats-max-conns must be 0 or more (0: NATS's own cap)")
	case cfg.natsMaxSubs < 0:
		return usageErrorf("--nats-max-subs must be 0 or more (0: no cap)")
	case cfg.natsMaxPending < stream.MaxPayload:
		return usageErrorf("--nats-max-pending must be at least %d bytes, the largest NATS message", stream.MaxPayload)
	case cfg.responseBudget != 0 && cfg.responseBudget < int64(cfg.pageBytes):
		return usageErrorf("--response-budget must be at least --page-bytes (%d), or 0 for the default", cfg.pageBytes)
	case cfg.maxConnsPerAddr < 0:
		return usageErrorf("--max-conns-per-addr must be 0 or more (0: no cap)")
	case cfg.witnessStartWait <= 0:
		return usageErrorf("--witness-start-wait must be more than 0")
	case cfg.publishInterval <= 0:
		return usageErrorf("--publish-interval must be more than 0")
	case cfg.stateInterval < 100*time.Millisecond:
		return usageErrorf("--state-interval must be at least 100ms")
	case cfg.publishDir != "" && cfg.mirrorOf != "":
		return usageErrorf("--publish-dir publishes a node's own chain; a mirror (--mirror-of) does not publish")
	case cfg.modelCache < 1<<20:
		return usageErrorf("--model-cache must be at least 1 MiB (1048576)")
	case cfg.witnessQuorum < 1 || len(cfg.witnesses) > 0 && cfg.witnessQuorum > len(cfg.witnesses):
		return usageErrorf("--witness-quorum must be from 1 to the number of --witness flags (%d)", max(1, len(cfg.witnesses)))
	}
	for _, w := range cfg.witnesses {
		if _, err := witness.ParseRemote(w); err != nil {
			return usageErrorf("--witness: %v", err)
		}
	}
	if _, err := cfg.httpTrustedProxies(); err != nil {
		return err
	}
	if cfg.publicURL != "" {
		if _, err := civhttp.ParsePublicURL(cfg.publicURL); err != nil {
			return usageErrorf("--public-url %q: %v", cfg.publicURL, err)
		}
	}
	return nil
}

// httpTrustedProxies parses --trusted-proxy: a CIDR, or an IP address that
// is a network of its own.
func (cfg serveConfig) httpTrustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range cfg.trustedProxies {
		v = strings.TrimSpace(v)
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, usageErrorf("--trusted-proxy %q is neither a CIDR nor an IP address", v)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// httpRateLimit is --rate-limit as civhttp.Options takes it, where 0 is the
// default and a negative limit is none.
func (cfg serveConfig) httpRateLimit() float64 {
	if cfg.rateLimit == 0 {
		return -1
	}
	return cfg.rateLimit
}

// httpMaxConns is --max-conns as civhttp.Options takes it.
func (cfg serveConfig) httpMaxConns() int {
	if cfg.maxConns == 0 {
		return -1
	}
	return cfg.maxConns
}

// natsLimit is a --nats-max-* cap as stream.Options takes it, where 0 is the
// default and a negative cap is none.
func natsLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// httpMaxConnsPerAddr is --max-conns-per-addr as civhttp.Options takes it.
func (cfg serveConfig) httpMaxConnsPerAddr() int {
	if cfg.maxConnsPerAddr == 0 {
		return -1
	}
	return cfg.maxConnsPerAddr
}

// run runs the node until ctx is done.
func (c *serveCmd) run(ctx context.Context) error {
	cfg := c.cfg
	logger, err := c.m.logger(c.g)
	if err != nil {
		return err
	}
	// First, so that a bad catalog file stops start-up before anything is created.
	cat, err := localnode.LoadCatalog(cfg.catalog)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(cfg.dataDir, c.m.Getenv, c.m.HomeDir)
	if err != nil {
		return err
	}
	build := readBuildInfo()
	proxies, err := cfg.httpTrustedProxies()
	if err != nil {
		return err
	}
	lc := localnode.Config{
		Dir: dir, Addr: cfg.addr, TLS: cfg.tls, Catalog: cat, RegistryURL: cfg.registryURL, ModelCache: cfg.modelCache,
		HTTP: civhttp.Options{
			Governs:         cfg.governs,
			PageBytes:       cfg.pageBytes,
			ResponseBudget:  cfg.responseBudget,
			RateLimit:       cfg.httpRateLimit(),
			RateBurst:       cfg.rateBurst,
			MaxConns:        cfg.httpMaxConns(),
			MaxConnsPerAddr: cfg.httpMaxConnsPerAddr(),
			TrustedProxies:  proxies,
			PublicURL:       cfg.publicURL,
		},
		NATS: stream.Options{Listen: cfg.natsListen, LeafURL: cfg.natsLeaf, TLSCertFile: cfg.natsTLSCert, TLSKeyFile: cfg.natsTLSKey,
			MaxConns: natsLimit(cfg.natsMaxConns), MaxSubs: natsLimit(cfg.natsMaxSubs), MaxPending: cfg.natsMaxPending},
		Version: build.Version, Commit: build.Commit, GoVersion: build.GoVersion,
		Witnessing:    localnode.Witnessing{Witnesses: cfg.witnesses, Quorum: cfg.witnessQuorum, For: cfg.witnessFor, StartWait: cfg.witnessStartWait},
		Published:     cfg.published,
		Publish:       localnode.Publishing{Target: cfg.publishDir, Interval: cfg.publishInterval, Getenv: c.m.Getenv},
		StateInterval: cfg.stateInterval,
		Settings:      []any{"rate_limit", cfg.rateLimit, "max_conns", cfg.maxConns, "max_conns_per_addr", cfg.maxConnsPerAddr},
		Logger:        logger,
		TreeBuildBar:  c.m.treeBuildBar(),
		Listening: func(addr string) error {
			if _, err := fmt.Fprintf(c.m.Stdout, "civnode listening on %s://%s\n", cfg.tls.Scheme(), addr); err != nil {
				return fmt.Errorf("print listening line: %w", err)
			}
			return nil
		},
		Notify: c.m.notifyServiceManager,
	}
	if cfg.mirrorOf != "" {
		src, err := cfg.mirror.source(cfg.mirrorOf)
		if err != nil {
			return err
		}
		lc.Mirror = &src
	}
	return localnode.Run(ctx, lc)
}
