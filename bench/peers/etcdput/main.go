package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// result is the JSON line the program prints.
type result struct {
	PutsPerS   float64 `json:"puts_per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	Clients    int     `json:"clients"`
	Conns      int     `json:"conns"`
	N          int     `json:"n"`
	ValueBytes int     `json:"value_bytes"`
}

type config struct {
	n, clients, conns, valueSize, warmup int
	dir                                  string
	timeout                              time.Duration
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 20000, "timed Puts, each of a distinct key")
	flag.IntVar(&cfg.clients, "c", 64, "concurrent goroutines putting")
	// A few connections shared by many goroutines is how etcd's own benchmark
	// tool is run (--conns, --clients): gRPC multiplexes the calls of a
	// connection, and one HTTP/2 connection for 64 callers serialises their
	// frames through one transport.
	flag.IntVar(&cfg.conns, "conns", 8, "gRPC client connections the goroutines share")
	// The size of the mission create body civnode bench sends.
	flag.IntVar(&cfg.valueSize, "value-size", 461, "bytes of each value")
	flag.IntVar(&cfg.warmup, "warmup", 2000, "Puts before the timed ones, on keys of their own")
	flag.StringVar(&cfg.dir, "dir", "", "parent `DIR` of etcd's temporary data dir (default $TMPDIR)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	flag.Parse()
	if err := cfg.check(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdput:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	res, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdput:", err)
		os.Exit(1)
	}
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdput:", err)
		os.Exit(1)
	}
	fmt.Println(string(line))
}

func (cfg config) check() error {
	switch {
	case flag.NArg() != 0:
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	case cfg.n < 1:
		return errors.New("-n must be 1 or more")
	case cfg.clients < 1:
		return errors.New("-c must be 1 or more")
	case cfg.conns < 1 || cfg.conns > cfg.clients:
		return errors.New("-conns must be between 1 and -c")
	case cfg.valueSize < 1:
		return errors.New("-value-size must be 1 or more")
	case cfg.warmup < 0:
		return errors.New("-warmup must be 0 or more")
	case cfg.timeout <= 0:
		return errors.New("-timeout must be more than 0")
	}
	return nil
}

func run(ctx context.Context, cfg config) (result, error) {
	tmp, err := os.MkdirTemp(cfg.dir, "etcdput-")
	if err != nil {
		return result{}, fmt.Errorf("create temporary dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	// etcd logs its errors to a file, shown only when the run fails: a member
	// that is closed logs its listeners' ends at error level.
	logFile := filepath.Join(tmp, "etcd.log")
	fmt.Fprintln(os.Stderr, "etcdput: starting etcd in", tmp)
	e, endpoint, err := startEtcd(ctx, filepath.Join(tmp, "data"), logFile)
	if err != nil {
		return result{}, withLog(err, logFile)
	}
	defer e.Close()
	res, err := measure(ctx, cfg, endpoint)
	if err != nil {
		return result{}, withLog(err, logFile)
	}
	return res, nil
}

// withLog adds the tail of etcd's log to err.
func withLog(err error, logFile string) error {
	b, rerr := os.ReadFile(logFile)
	if rerr != nil || len(b) == 0 {
		return err
	}
	const tail = 4 << 10
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return fmt.Errorf("%w\netcd's log ends:\n%s", err, b)
}

// measure puts the warm-up and the timed Puts, and checks that etcd holds
// every timed key.
func measure(ctx context.Context, cfg config, endpoint string) (result, error) {
	clients := make([]*clientv3.Client, cfg.conns)
	for i := range clients {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{endpoint},
			DialTimeout: 10 * time.Second,
			Logger:      zap.NewNop(),
		})
		if err != nil {
			return result{}, fmt.Errorf("connect: %w", err)
		}
		defer c.Close()
		clients[i] = c
	}

	b := make([]byte, cfg.valueSize)
	for i := range b {
		b[i] = 'a' + byte(rand.IntN(26))
	}
	value := string(b)
	put := func(prefix string) func(ctx context.Context, worker, i int) error {
		return func(ctx context.Context, worker, i int) error {
			_, err := clients[worker%len(clients)].Put(ctx, fmt.Sprintf("%s/%08d", prefix, i), value)
			return err
		}
	}

	if cfg.warmup > 0 {
		fmt.Fprintln(os.Stderr, "etcdput: warm-up,", cfg.warmup, "puts")
		if _, _, err := load(ctx, cfg.clients, cfg.warmup, put("warmup")); err != nil {
			return result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	fmt.Fprintln(os.Stderr, "etcdput:", cfg.n, "puts from", cfg.clients, "goroutines over", cfg.conns, "connections")
	lat, elapsed, err := load(ctx, cfg.clients, cfg.n, put("put"))
	if err != nil {
		return result{}, err
	}

	// Every acknowledged Put is there.
	got, err := clients[0].Get(ctx, "put/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return result{}, fmt.Errorf("count keys: %w", err)
	}
	if got.Count != int64(cfg.n) {
		return result{}, fmt.Errorf("etcd holds %d keys after %d puts", got.Count, cfg.n)
	}
	return result{
		PutsPerS:   float64(cfg.n) / elapsed.Seconds(),
		P50Ms:      quantile(lat, 0.50),
		P99Ms:      quantile(lat, 0.99),
		Clients:    cfg.clients,
		Conns:      cfg.conns,
		N:          cfg.n,
		ValueBytes: cfg.valueSize,
	}, nil
}

// startEtcd starts a single member with etcd's defaults but for its listeners,
// which are on free loopback ports, and its log, which keeps to errors and
// goes to logFile.
func startEtcd(ctx context.Context, dir, logFile string) (*embed.Etcd, string, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{logFile}
	// Said out loud, though they are etcd's defaults: the durability measured.
	cfg.UnsafeNoFsync = false

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", errors.New("etcd was not ready within a minute")
	case <-ctx.Done():
		e.Close()
		return nil, "", ctx.Err()
	}
	return e, clientURL.String(), nil
}

// freeLoopbackURL is http://127.0.0.1:PORT for a port that was free a moment
// ago: the kernel's pick for port 0, released for etcd to bind.
func freeLoopbackURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: addr}, nil
}

// load runs n operations, numbered 0..n-1, from workers goroutines, and
// returns their latencies, sorted, and the time until the last one finished.
// The first error stops every worker.
func load(ctx context.Context, workers, n int, op func(ctx context.Context, worker, i int) error) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	lat := make([][]time.Duration, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(ctx, w, i); err != nil {
					cancel(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return all, elapsed, nil
}

// quantile is the latency below which a fraction q of the operations
// finished, in milliseconds.
func quantile(lat []time.Duration, q float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond)
}
