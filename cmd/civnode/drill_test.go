package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

// The failover drill (docs/operations.md, Failover): a primary publishing
// continuously to a bucket, two witnesses (transparency-dev's omniwitness
// and a civnode witness, both required), a standby serve --mirror-of the
// bucket, and 64 writers. The primary is killed mid-load, the standby
// promoted, and the writers carry on against it. Then every event of any
// published or witnessed checkpoint is on the new primary, both witnesses
// cosigned its tree (so nothing either cosigned before is inconsistent with
// it), the old primary restarted on its own data dir appends nothing and
// says where it is behind, and every acknowledged write the new primary
// lacks was acknowledged within the recovery point before the kill.

// drillWriters is how many clients write at once.
const drillWriters = 64

// drillRecoveryPoint bounds how long before the kill a write the new
// primary lacks may have been acknowledged: the publish interval, the
// witnesses' round trips and a loaded machine's delays (docs/operations.md
// gives the measured figure).
const drillRecoveryPoint = 5 * time.Second

func TestFailoverDrill(t *testing.T) {
	needBinary(t)
	omniBin := buildOmniwitness(t, t.TempDir())
	store := startDrillStore(t)
	rng := faultRand(t)
	for round := 1; round <= 3; round++ {
		killAfter := time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
		t.Run(fmt.Sprintf("round %d, kill after %v", round, killAfter.Round(time.Millisecond)), func(t *testing.T) {
			drillRound(t, omniBin, store, fmt.Sprintf("round-%d", round), killAfter, rng)
		})
	}
}

// ackedWrite is a mission a writer created, and when the node answered.
type ackedWrite struct {
	id string
	at time.Time
}

// drillNode is what the drill reads of GET /v1/transparency.
type drillNode struct {
	TreeSize  int64 `json:"tree_size"`
	Witnessed *struct {
		TreeSize  int64    `json:"tree_size"`
		Cosigners []string `json:"cosigners"`
	} `json:"witnessed"`
	ForkGuard map[string]any `json:"fork_guard"`
}

func drillState(t *testing.T, url, token string) drillNode {
	t.Helper()
	var s drillNode
	getJSON(t, url+"/v1/transparency", token, http.StatusOK, &s)
	return s
}

func drillRound(t *testing.T, omniBin string, store drillStore, prefix string, killAfter time.Duration, rng *rand.Rand) {
	root := t.TempDir()
	primaryDir, standbyDir := filepath.Join(root, "primary"), filepath.Join(root, "standby")

	// The primary's key and first events.
	p := startProcess(t, primaryDir)
	postOK(t, p.url, p.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	var sum struct {
		Origin      string `json:"origin"`
		VerifierKey string `json:"verifier_key"`
	}
	getJSON(t, p.url+"/v1/transparency", p.token, http.StatusOK, &sum)
	p.signal(t, syscall.SIGTERM)
	p.wait(t)

	// The witnesses.
	omniDir := filepath.Join(root, "omniwitness")
	if err := os.MkdirAll(omniDir, 0o700); err != nil {
		t.Fatal(err)
	}
	const omniName = "omniwitness.drill.test"
	omniKey, omniAddr := startOmniwitness(t, omniBin, omniDir, omniName, sum.Origin, sum.VerifierKey)
	cw := startProcess(t, filepath.Join(root, "witness"), "--witness-for", sum.VerifierKey)
	var wk struct {
		VerifierKey string `json:"verifier_key"`
	}
	getJSON(t, cw.url+"/v1/witness", cw.token, http.StatusOK, &wk)
	witnesses := []string{"--witness", omniKey + "@http://" + omniAddr, "--witness", wk.VerifierKey + "@" + cw.url + "/v1/witness", "--witness-quorum", "2"}
	target, published := store.bucket(t, prefix)
	publishing := append([]string{"--publish-dir", target, "--publish-interval", "200ms", "--published", published}, witnesses...)

	p = startProcessEnv(t, primaryDir, store.env, publishing...)
	waitFor(t, "the first witnessed checkpoint in the bucket", func() (bool, string) {
		size, err := fetchPublishedSize(published)
		return err == nil && size > 0, fmt.Sprint(size, err)
	})
	standby := startProcess(t, standbyDir, "--mirror-of", published, "--mirror-witness", omniKey, "--mirror-witness", wk.VerifierKey,
		"--mirror-quorum", "2", "--mirror-interval", "200ms")

	// The writers, until the primary dies.
	stop := drillWrite(p.url, p.token, "before")
	time.Sleep(killAfter)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	p.wait(t)
	before := stop()
	if len(before) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}

	// The standby holds the newest published tree.
	var last int64
	waitFor(t, "the standby at the bucket's newest tree", func() (bool, string) {
		size, err := fetchPublishedSize(published)
		if err != nil {
			return false, err.Error()
		}
		st := drillState(t, standby.url, standby.token)
		ok := st.TreeSize == size && size == last
		last = size
		return ok, fmt.Sprintf("bucket %d, standby %d", size, st.TreeSize)
	})
	standby.signal(t, syscall.SIGTERM)
	if code := standby.wait(t); code != 0 {
		t.Fatalf("the standby exited %d\n%s", code, standby.stderr)
	}

	// Promote it, and the writers carry on against it.
	out, code := runBinary(t, append([]string{"promote", "--data-dir", standbyDir, "--key", filepath.Join(primaryDir, "node.key"),
		"--published", published}, witnesses...)...)
	if code != 0 {
		t.Fatalf("promote: %d\n%s", code, out)
	}
	np := startProcessEnv(t, standbyDir, store.env, publishing...)
	waitFor(t, "the promoted node takes writes", func() (bool, string) {
		status, body, err := postStatus(httpClient, np.url+"/v1/core/missions", np.token, []byte(drillMission("after", 0)))
		return err == nil && status == http.StatusOK, fmt.Sprint(status, string(body), err)
	})
	stopAfter := drillWrite(np.url, np.token, "after")
	time.Sleep(time.Second)
	after := stopAfter()
	if len(after) == 0 {
		t.Fatal("no write was acknowledged by the promoted node")
	}

	// Acknowledged writes the new primary lacks: within the recovery point.
	lost := 0
	var oldest time.Duration // the oldest lost write's age at the kill
	for _, w := range before {
		status, _, err := getStatus(np.url+"/v1/core/missions/"+w.id, np.token)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusOK {
			continue
		}
		lost++
		oldest = max(oldest, killedAt.Sub(w.at))
		if killedAt.Sub(w.at) > drillRecoveryPoint {
			t.Errorf("mission %s, acknowledged %v before the kill, is not on the new primary (recovery point %v)", w.id, killedAt.Sub(w.at).Round(time.Millisecond), drillRecoveryPoint)
		}
	}
	t.Logf("%d writes acknowledged before the kill, %d of them lost, the oldest acknowledged %v before it; %d after the promotion",
		len(before), lost, oldest.Round(time.Millisecond), len(after))

	// Both witnesses cosign the new primary's tree.
	var st drillNode
	waitFor(t, "the new primary's tree cosigned by both witnesses", func() (bool, string) {
		st = drillState(t, np.url, np.token)
		return st.Witnessed != nil && st.Witnessed.TreeSize == st.TreeSize && len(st.Witnessed.Cosigners) == 2, fmt.Sprintf("%+v", st)
	})
	np.signal(t, syscall.SIGTERM)
	if code := np.wait(t); code != 0 {
		t.Fatalf("the promoted node exited %d\n%s", code, np.stderr)
	}

	// Every event of the bucket's tree and of the old primary's witnessed
	// checkpoint is on the new primary.
	l := openTestLog(t, standbyDir)
	size, behind, err := transparency.Behind(context.Background(), l, published)
	if err != nil || behind != 0 {
		l.Close()
		t.Fatalf("the new primary against the bucket's tree of %d: behind %d, %v", size, behind, err)
	}
	if w, err := witness.ReadWitnessed(filepath.Join(primaryDir, "cosignatures.json")); err != nil {
		t.Fatal(err)
	} else if w != nil {
		k, err := transparency.ParseKey(sum.VerifierKey)
		if err != nil {
			t.Fatal(err)
		}
		head, err := k.OpenCheckpoint([]byte(w.Checkpoint))
		if err != nil {
			t.Fatal(err)
		}
		root, err := l.TreeRoot(head.Size)
		if err != nil || root != head.Root {
			t.Errorf("the old primary's witnessed tree of %d is not the new primary's: %v", head.Size, err)
		}
	}
	l.Close()

	// The old primary, back on its own data dir, appends nothing and says
	// where it is behind.
	old := startProcessEnv(t, primaryDir, store.env, append([]string{"--published", published}, witnesses...)...)
	status, body, err := postStatus(httpClient, old.url+"/v1/core/missions", old.token, []byte(drillMission("old", 0)))
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"code":"behind_published"`) {
		t.Fatalf("the old primary took a write: %d %s %v", status, body, err)
	}
	fg := drillState(t, old.url, old.token).ForkGuard
	if fg["writable"] != false || fg["seen"] == "" {
		t.Errorf("the old primary's fork_guard: %v", fg)
	}
	old.signal(t, syscall.SIGTERM)
	old.wait(t)
}

func drillMission(phase string, i int) string {
	return fmt.Sprintf(`{"title":"%s %d","description":"d","publisher":"ada","publisher_kind":"agent","domain":"survey","subnet_id":"genesis","reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{}}`, phase, i)
}

// drillWrite runs drillWriters clients creating missions on the node at url
// until a write fails or stop is called; stop returns the acknowledged ones.
func drillWrite(url, token, phase string) (stop func() []ackedWrite) {
	var (
		mu   sync.Mutex
		out  []ackedWrite
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range drillWriters {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				status, body, err := postStatus(client, url+"/v1/core/missions", token, []byte(drillMission(fmt.Sprintf("%s %d", phase, w), i)))
				if err != nil || status != http.StatusOK {
					return
				}
				var m struct {
					MissionID string `json:"mission_id"`
				}
				if json.Unmarshal(body, &m) != nil {
					return
				}
				mu.Lock()
				out = append(out, ackedWrite{id: m.MissionID, at: time.Now()})
				mu.Unlock()
			}
		})
	}
	return func() []ackedWrite {
		close(done)
		wg.Wait()
		return out
	}
}

// getStatus answers a GET with the token: its status and body.
func getStatus(url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// fetchPublishedSize reads the tree size of the checkpoint published at url.
func fetchPublishedSize(url string) (int64, error) {
	resp, err := httpClient.Get(url + "/" + transparency.CheckpointFile)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/checkpoint: %d", url, resp.StatusCode)
	}
	var origin string
	var size int64
	if _, err := fmt.Sscanf(string(b), "%s\n%d\n", &origin, &size); err != nil {
		return 0, fmt.Errorf("the checkpoint %q: %v", b, err)
	}
	return size, nil
}

// drillStore is where the primary publishes: a bucket the node writes with
// the AWS_* settings in env, which mirrors read over plain HTTP.
type drillStore struct {
	env    []string
	bucket func(t *testing.T, prefix string) (target, url string)
}

// startDrillStore runs SeaweedFS's S3 gateway (publish_s3_test.go) with one
// bucket; each round publishes under a prefix of its own.
func startDrillStore(t *testing.T) drillStore {
	t.Helper()
	endpoint := startSeaweedFS(t, buildSeaweedFS(t))
	makeBucket(t, endpoint, "drill")
	return drillStore{
		env: []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_ACCESS_KEY_ID=" + s3TestAccessKey,
			"AWS_SECRET_ACCESS_KEY=" + s3TestSecretKey, "AWS_REGION=us-east-1"},
		bucket: func(t *testing.T, prefix string) (string, string) {
			return "s3://drill/" + prefix, endpoint + "/drill/" + prefix
		},
	}
}
