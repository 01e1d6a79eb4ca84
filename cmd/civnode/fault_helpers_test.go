package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
)

// The fault tests (docs/reliability.md). TestFaultKillMixedLoad runs
// -civnode.fault-rounds rounds (or $CIVNODE_FAULT_ROUNDS), 3 by default:
//
//	go test ./cmd/civnode -run TestFaultKill -civnode.fault-rounds=20 -v
//
// Every random choice comes from one seed, printed by each test that uses it;
// -civnode.fault-seed=N repeats a run.
var (
	faultRounds = flag.Int("civnode.fault-rounds", faultEnvInt("CIVNODE_FAULT_ROUNDS", 3),
		"rounds of TestFaultKillMixedLoad (default $CIVNODE_FAULT_ROUNDS, else 3)")
	faultSeed = flag.Uint64("civnode.fault-seed", 0, "seed of the fault tests' random choices; 0 picks one")
)

func faultEnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// faultRand returns the test's random source and logs its seed.
func faultRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (repeat with -civnode.fault-seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// copyDataDir copies the regular files of a stopped or killed node's data dir
// (sockets left by a killed node are skipped), as an operator would before
// touching a damaged one.
func copyDataDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// newestWAL is the newest write-ahead log of the node in dir and the offset
// at which each of its records starts, read with Pebble's own reader.
func newestWAL(t *testing.T, dir string) (path string, starts []int64) {
	t.Helper()
	logs, err := wal.Scan(wal.Dir{FS: vfs.Default, Dirname: datadir.Dir(dir).DBPath()})
	if err != nil || len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s: %v", dir, err)
	}
	r := logs[len(logs)-1].OpenForRead()
	defer r.Close()
	for {
		_, off, err := r.NextRecord()
		if errors.Is(err, io.EOF) {
			return path, starts
		}
		if err != nil {
			t.Fatalf("read the write-ahead log: %v", err)
		}
		path = off.PhysicalFile
		starts = append(starts, off.Physical)
	}
}

// postStatus posts body as JSON with the bearer token and returns the status
// and body; err is a transport failure.
func postStatus(client *http.Client, url, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// post2xx is postStatus for a write that must be answered 200.
func post2xx(client *http.Client, url, token string, body []byte) ([]byte, error) {
	status, b, err := postStatus(client, url, token, body)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("POST %s: status %d: %s", url, status, b)
	}
	return b, err
}
