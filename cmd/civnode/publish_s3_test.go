package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/transparency"
)

// seaweedfsDir is a Go module of its own (so that SeaweedFS is no
// dependency of ours) that pins the SeaweedFS module whose weed command the
// S3 test runs: an S3-compatible object store we did not write.
var seaweedfsDir = filepath.Join("testdata", "seaweedfs")

// buildSeaweedFS builds SeaweedFS's weed from the module proxy, once per
// version into the user's cache directory (the build takes minutes), and
// returns its path; a build that cannot happen here (no proxy, no cache)
// skips the test, or fails it under CI=true.
func buildSeaweedFS(t *testing.T) string {
	t.Helper()
	version, err := seaweedfsVersion()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "civnode-test", "weed-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	tmp := fmt.Sprintf("%s.build-%d", bin, os.Getpid())
	defer os.Remove(tmp)
	for _, args := range [][]string{
		{"mod", "download"},
		{"build", "-o", tmp, "github.com/seaweedfs/seaweedfs/weed"},
	} {
		cmd := exec.CommandContext(ctx, goTool(), args...)
		cmd.Dir = seaweedfsDir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			testtool.Missing(t, fmt.Sprintf("go %s of SeaweedFS (in %s) needs a reachable Go module proxy: %v\n%s", strings.Join(args, " "), seaweedfsDir, err, out))
		}
	}
	// Renamed into place: a build cut short leaves no binary to reuse.
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// seaweedfsVersion is the SeaweedFS version testdata/seaweedfs/go.mod pins.
func seaweedfsVersion() (string, error) {
	b, err := os.ReadFile(filepath.Join(seaweedfsDir, "go.mod"))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "github.com/seaweedfs/seaweedfs" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod requires no github.com/seaweedfs/seaweedfs", seaweedfsDir)
}

// freePorts returns n distinct loopback ports no one listens on: each is
// held open until all are chosen, since a port closed at once can be
// handed out again by the next request for one.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	ports := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, port, err := net.SplitHostPort(ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, port)
	}
	return ports
}

// The S3 identity the test's SeaweedFS knows; anonymous readers may read.
const (
	s3TestAccessKey = "civnodetest"
	s3TestSecretKey = "civnode-test-secret-not-a-real-one"
)

// startSeaweedFS runs weed server (master, volume, filer and S3 gateway)
// on loopback ports in a temporary directory until the test ends, and
// returns the S3 gateway's URL once it answers.
func startSeaweedFS(t *testing.T, bin string) string {
	t.Helper()
	tmp := t.TempDir()
	cfg := map[string]any{"identities": []any{
		map[string]any{"name": "civnode", "credentials": []any{map[string]string{"accessKey": s3TestAccessKey, "secretKey": s3TestSecretKey}},
			"actions": []string{"Admin", "Read", "List", "Tagging", "Write"}},
		map[string]any{"name": "anonymous", "actions": []string{"Read"}},
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s3cfg := filepath.Join(tmp, "s3.json")
	if err := os.WriteFile(s3cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := freePorts(t, 8)
	s3port := p[0]
	args := []string{"server", "-dir", data, "-ip", "127.0.0.1", "-ip.bind", "127.0.0.1",
		"-master.port", p[1], "-master.port.grpc", p[2], "-master.volumeSizeLimitMB", "64",
		"-volume.port", p[3], "-volume.port.grpc", p[4], "-volume.max", "8",
		"-filer", "-filer.port", p[5], "-filer.port.grpc", p[6],
		"-s3", "-s3.port", s3port, "-s3.port.grpc", p[7], "-s3.config", s3cfg}
	cmd := exec.Command(bin, args...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	url := "http://127.0.0.1:" + s3port
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(url + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("weed server exited before its S3 gateway answered:\n%s", logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the S3 gateway did not answer within 2m: %v\n%s", err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return url
}

// makeBucket creates bucket at the S3 endpoint, retrying while the store
// is still starting (its volumes and filer register after the gateway
// answers).
func makeBucket(t *testing.T, endpoint, bucket string) {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3TestAccessKey, s3TestSecretKey, ""), BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: "us-east-1"})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("make bucket %s: %v", bucket, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPublishS3SeaweedFS: a node publishes continuously to a bucket of a
// real S3-compatible store (SeaweedFS, built from the module proxy) with
// serve --publish-dir s3://BUCKET/PREFIX and the AWS_* settings; the
// objects are the publish directory's paths under the prefix, with a static
// host's content types, readable anonymously over plain HTTP; and a mirror
// (serve --mirror-of the bucket's URL of the prefix) follows it to the tip.
func TestPublishS3SeaweedFS(t *testing.T) {
	needBinary(t) // the full suite only: the first build takes minutes
	bin := buildSeaweedFS(t)
	endpoint := startSeaweedFS(t, bin)
	makeBucket(t, endpoint, "civnode")

	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", s3TestAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3TestSecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	node := startProcess(t, t.TempDir(), "--publish-dir", "s3://civnode/chains/node-1", "--publish-interval", "100ms", "--registry-url", "")
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 300 {
		if _, err := bootstrapOnce(client, node, fmt.Sprintf("s3-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var st stateBody
	getJSON(t, node.url+"/v1/state", node.token, 200, &st)
	tip := int64(st.Chain.Seq)

	base := endpoint + "/civnode/chains/node-1"
	size := waitPublished(t, base, tip)
	t.Logf("published %d events to the bucket (the node's tip was %d)", size, tip)
	for rel, want := range map[string]string{
		transparency.CheckpointFile:     "text/plain",
		transparency.SealFile:           "application/json",
		transparency.VerifierKeyFile:    "text/plain",
		"tile/0/000":                    "application/octet-stream",
		transparency.BundlePath(0, 256): "application/x-ndjson",
		transparency.BundlePath(1, 256): "application/x-ndjson",
	} {
		resp, err := http.Get(base + "/" + rel)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) {
			t.Errorf("anonymous GET %s: %d, Content-Type %q, want 200 and %s", rel, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
	if strings.Contains(node.stderr.String(), s3TestSecretKey) {
		t.Error("the node's log holds the S3 secret key")
	}

	m := startProcess(t, t.TempDir(), "--mirror-of", base, "--mirror-interval", "200ms", "--registry-url", "")
	deadline := time.Now().Add(time.Minute)
	for {
		var sum transparency.Summary
		getJSON(t, m.url+"/v1/transparency", m.token, 200, &sum)
		if sum.TreeSize >= size {
			t.Logf("the mirror of the bucket holds %d events", sum.TreeSize)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror holds %d events after 1m, the bucket %d\nmirror's stderr:\n%s", sum.TreeSize, size, m.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitPublished reads the checkpoint at base anonymously until it is of at
// least size events, and returns its size.
func waitPublished(t *testing.T, base string, size int64) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var got int64
	for {
		resp, err := http.Get(base + "/" + transparency.CheckpointFile)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if lines := strings.Split(string(b), "\n"); resp.StatusCode == http.StatusOK && len(lines) > 1 {
				got, _ = strconv.ParseInt(lines[1], 10, 64)
			}
		}
		if got >= size {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checkpoint at %s is of %d events after 1m, want %d (%v)", base, got, size, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
