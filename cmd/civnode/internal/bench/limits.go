package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/opsrate"
)

// The machine's own limits, measured by bench on an idle process before any
// load, so that every figure of the node is read beside what this machine can
// do at best in the same run (docs/benchmarks.md).

// edRates is the Ed25519 sign rate over msg on one core and on every core at
// once (GOMAXPROCS goroutines), and the single-core verify rate, each the
// median of seven bursts so that one preempted burst on a shared machine does
// not set the figure.
func edRates(msg []byte) (sign, signCores, verify float64) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)) // any key signs at the same rate
	sig := ed25519.Sign(key, msg)
	pub := key.Public().(ed25519.PublicKey)
	sign = opsrate.Median(func() { ed25519.Sign(key, msg) })
	signCores = opsrate.MedianParallel(runtime.GOMAXPROCS(0), func() { ed25519.Sign(key, msg) })
	verify = opsrate.Median(func() { ed25519.Verify(pub, msg, sig) })
	return sign, signCores, verify
}

// eventMessage returns the bytes the node signs for one event of the append
// phase (its U, 800-odd bytes): a mission.created appended to a throwaway
// log in memory. The signing limit is measured over them because Ed25519
// hashes the whole message twice, so a shorter stand-in would sign faster
// than any event can be signed and overstate the limit.
func eventMessage(logger *slog.Logger) ([]byte, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: logger})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	payload, err := eventlog.Canonicalize(createdPayload(0))
	if err != nil {
		return nil, err
	}
	evs, err := l.Append(context.Background(), eventlog.Draft{Type: events.TypeMissionCreated, Payload: payload})
	if err != nil {
		return nil, err
	}
	return evs[0].SignedBytes(), nil
}

// syncWriteMillis is the median latency of one lone synced Pebble write in a
// throwaway database under tmp.
func syncWriteMillis(tmp string, logger *slog.Logger) (float64, error) {
	dir := filepath.Join(tmp, "pebble-ref")
	defer os.RemoveAll(dir)
	d, err := eventlog.SyncWriteLatency(dir, 500, logger)
	if err != nil {
		return 0, fmt.Errorf("synced pebble write: %w", err)
	}
	return ms(d), nil
}

// httpLimit is the rate of a bare net/http server in this process that does the
// least a create must do — decode the mission JSON, encode it again and, when
// sign is set, sign the encoding with Ed25519 — driven by the load generator at
// conns connections for d.
func httpLimit(ctx context.Context, conns int, d time.Duration, body []byte, sign bool) (float64, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return 0, err
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		enc, err := json.Marshal(v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var sig []byte
		if sign {
			sig = ed25519.Sign(key, enc)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"size":%d,"signature":%q}`+"\n", len(enc), base64.StdEncoding.EncodeToString(sig))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-served
	}()

	t := &target{base: "http://" + ln.Addr().String()}
	c := newLoadClient(conns, 30*time.Second)
	defer closeClient(c)
	bufs := newBuffers(conns)
	op := func(ctx context.Context, w int) (int, error) {
		return 1, t.do(ctx, c, http.MethodPost, "/", body, http.StatusOK, bufs.of(w))
	}
	if _, err := runLoad(ctx, conns, time.Minute, int64(conns), op, nil); err != nil { // open the connections
		return 0, err
	}
	res, err := runLoad(ctx, conns, d, 0, op, nil)
	if err != nil {
		return 0, err
	}
	if res.ops == 0 {
		return 0, errors.New("no request finished")
	}
	return res.opsPerSecond(), nil
}
