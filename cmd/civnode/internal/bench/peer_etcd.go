package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/civnode/civnode/internal/logkey"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// With Config.Peers holding "etcd" (civnode bench --peer etcd), Run
// measures etcd's Put over gRPC beside the node's creates: a round is the
// node's 64-client POST /v1/core/missions for Config.Duration, then etcd's
// Puts from 64 goroutines, and the figures are the medians of the rounds.
// etcd is measured by a harness in bench/peers/etcdput, a module of its own
// so that etcd is no dependency of civnode; bench builds it with the go tool
// from the source tree it is run in.

// checkPeers checks the peer fields of cfg; its errors name the flags.
func (cfg *Config) checkPeers() error {
	for _, n := range cfg.Peers {
		if n != "etcd" {
			return fmt.Errorf("--peer %q: the peers are etcd", n)
		}
	}
	if len(cfg.Peers) == 0 {
		return nil
	}
	switch {
	case cfg.PeerRounds < 1:
		return errors.New("--peer-rounds must be 1 or more")
	case cfg.PeerPuts < 1:
		return errors.New("--peer-puts must be 1 or more")
	}
	return nil
}

// etcdPeerConns is how many gRPC connections the harness's goroutines share:
// a few, as etcd's own benchmark tool is run.
const etcdPeerConns = 8

// peerRows are the report's rows of --peer etcd.
var peerRows = []row{
	{section: "beside etcd v3.7.3: Put over gRPC, 64 goroutines on 8 connections, fsync on; rounds alternate with the node's creates (medians)", peer: true},
	{key: "etcd_put_c64_per_s", unit: "/s", peer: true},
	{key: "etcd_put_c64_p99_ms", unit: "ms", peer: true},
	{key: "etcd_beside_http_create_c64_per_s", unit: "/s", limit: "etcd_put_c64_per_s", ratio: "etcd_beside_http_create_c64_x_etcd_put",
		target: "≥ 1 × etcd", peer: true},
	{key: "etcd_beside_http_create_c64_p99_ms", unit: "ms", peer: true},
}

// peerPhase runs the --peer rounds, if asked for. A peer that cannot be built
// here (no go tool, no source tree, its modules out of reach) is reported and
// skipped; the rest of the run goes on.
func (b *harness) peerPhase(ctx context.Context) error {
	if !slices.Contains(b.cfg.Peers, "etcd") {
		return nil
	}
	bin := filepath.Join(b.tmp, "etcdput")
	b.log.Info("bench: building the etcd harness (go build)")
	if err := buildEtcdPeer(ctx, bin); err != nil {
		var u peerUnavailableError
		if errors.As(err, &u) {
			b.log.Warn("bench: etcd skipped", logkey.Why, err)
			return nil
		}
		return err
	}
	var civ, civP99, etcd, etcdP99 []float64
	for round := range b.cfg.PeerRounds {
		b.log.Info("bench: beside etcd: POST /v1/core/missions", logkey.Round, round+1, logkey.Clients, writers, logkey.Duration, b.cfg.Duration)
		res, err := b.createsAt(ctx, writers)
		if err != nil {
			return err
		}
		civ, civP99 = append(civ, res.opsPerSecond()), append(civP99, res.quantile(0.99))
		b.log.Info("bench: beside etcd: etcd Put", logkey.Round, round+1, logkey.Clients, writers, logkey.Puts, b.cfg.PeerPuts)
		er, err := runEtcdPeer(ctx, bin, b.tmp, b.cfg.PeerPuts, writers)
		if err != nil {
			return err
		}
		etcd, etcdP99 = append(etcd, er.PutsPerS), append(etcdP99, er.P99Ms)
		b.log.Info("bench: beside etcd", logkey.Round, round+1, logkey.NodeCreatePerS, int(res.opsPerSecond()),
			logkey.EtcdPutPerS, int(er.PutsPerS), logkey.EtcdP99MS, round3(er.P99Ms))
	}
	b.res.set("etcd_put_c64_per_s", median(etcd))
	b.res.set("etcd_put_c64_p99_ms", median(etcdP99))
	b.res.set("etcd_beside_http_create_c64_per_s", median(civ))
	b.res.set("etcd_beside_http_create_c64_p99_ms", median(civP99))
	return nil
}

// createsAt times POST /v1/core/missions from clients clients for Duration,
// after a request on each connection to open it, as createRates does.
func (b *harness) createsAt(ctx context.Context, clients int) (loadResult, error) {
	c := newLoadClient(clients, 30*time.Second)
	defer closeClient(c)
	op := b.createOp(c, newBuffers(clients))
	if _, err := runLoad(ctx, clients, time.Minute, int64(clients), op, nil); err != nil {
		return loadResult{}, fmt.Errorf("create missions: %w", err)
	}
	res, err := runLoad(ctx, clients, b.cfg.Duration, 0, op, nil)
	if err != nil {
		return loadResult{}, fmt.Errorf("create missions: %w", err)
	}
	return res, nil
}

// median of v; of an even count, the mean of the middle two.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// peerResult is the JSON line a peer harness prints.
type peerResult struct {
	PutsPerS   float64 `json:"puts_per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	Clients    int     `json:"clients"`
	Conns      int     `json:"conns"`
	N          int     `json:"n"`
	ValueBytes int     `json:"value_bytes"`
}

// peerUnavailableError says why a peer cannot be measured on this machine.
type peerUnavailableError struct{ why string }

func (e peerUnavailableError) Error() string { return e.why }

// etcdPeerModule is the harness's module path, which its go.mod names.
const etcdPeerModule = "github.com/civnode/civnode/bench/peers/etcdput"

// buildEtcdPeer builds the harness to bin with the go tool. Its source is
// found in the civnode source tree that holds the working directory.
func buildEtcdPeer(ctx context.Context, bin string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return peerUnavailableError{"the go tool is not on PATH, and it builds the etcd harness"}
	}
	src, err := etcdPeerSource()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, ".")
	cmd.Dir = src
	// The harness's own go.mod and go.sum, never a workspace around it.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return peerUnavailableError{fmt.Sprintf("go build in %s failed (offline, without etcd's modules in the module cache?): %v\n%s",
			src, err, bytes.TrimSpace(out))}
	}
	return nil
}

// etcdPeerSource finds bench/peers/etcdput in the working directory or one
// above it.
func etcdPeerSource() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		src := filepath.Join(d, "bench", "peers", "etcdput")
		if mod, err := os.ReadFile(filepath.Join(src, "go.mod")); err == nil &&
			bytes.HasPrefix(mod, []byte("module "+etcdPeerModule+"\n")) {
			return src, nil
		}
		if filepath.Dir(d) == d {
			return "", peerUnavailableError{fmt.Sprintf("no bench/peers/etcdput in %s or above: run bench from within the civnode source tree", wd)}
		}
	}
}

// runEtcdPeer runs the harness built at bin once: n Puts from clients
// goroutines, etcd's data under dir. It reads the JSON line the harness
// prints.
func runEtcdPeer(ctx context.Context, bin, dir string, n, clients int) (peerResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-n", strconv.Itoa(n), "-c", strconv.Itoa(clients),
		"-conns", strconv.Itoa(etcdPeerConns), "-value-size", strconv.Itoa(len(missionBody())), "-dir", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return peerResult{}, fmt.Errorf("%s: %w\n%s", filepath.Base(bin), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return parsePeerLine(stdout.Bytes())
}

// parsePeerLine reads a harness's one JSON line, which must carry a rate and
// latencies.
func parsePeerLine(out []byte) (peerResult, error) {
	line := strings.TrimSpace(string(out))
	if line == "" || strings.Contains(line, "\n") {
		return peerResult{}, fmt.Errorf("peer harness printed %q, want one JSON line", snippet(out))
	}
	var r peerResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return peerResult{}, fmt.Errorf("peer harness printed %q: %w", snippet(out), err)
	}
	if !(r.PutsPerS > 0 && r.P50Ms > 0 && r.P99Ms > 0 && r.N > 0 && r.Clients > 0) {
		return peerResult{}, fmt.Errorf("peer harness printed %q: a figure is missing or not positive", line)
	}
	return r, nil
}
