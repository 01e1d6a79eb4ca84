package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
)

// faultNode is a node served in process through the real HTTP server, as
// serve wires it, over a store whose file system a test chooses: a process
// cannot be handed a Go file system, so the disk faults are injected here.
type faultNode struct {
	core  *core.Core
	url   string
	token string
}

const faultToken = "fault-test-owner-token-0123456789abcdef0123456789abcdef"

var faultKey = ed25519.NewKeyFromSeed([]byte("civnode-fault-test-seed-32bytes!"))

// newFaultNode opens the node in dir on fs (nil: the real one) with reg as
// its registry (nil: none) and serves it until the test ends.
func newFaultNode(t *testing.T, dir string, fs vfs.FS, reg *servicenet.Client) *faultNode {
	t.Helper()
	cfg := core.Config{Governs: []string{"genesis"}, Keys: servicenet.NewKeystore(filepath.Join(dir, "wallets"))}
	if reg != nil {
		cfg.Registry = reg
	}
	c, err := core.Open(eventlog.Options{Dir: filepath.Join(dir, "db"), Key: faultKey, FS: fs, Logger: discardLogger()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv := civhttp.New(localnode.ServerOptions(c, civhttp.Options{OwnerToken: faultToken, Governs: []string{"genesis"}, Logger: discardLogger()}))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &faultNode{core: c, url: hs.URL, token: faultToken}
}

// post sends a write and returns its status and body.
func (n *faultNode) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	status, b, err := postStatus(httpClient, n.url+path, n.token, []byte(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return status, b
}

// TestFaultDiskFull and TestFaultFsyncError inject, through Pebble's
// error-injecting file system, a full disk (ENOSPC on every write and
// preallocation) and a failing fsync (EIO on the write-ahead log's sync) into
// a node that has acknowledged writes. The next write gets 503
// (unavailable), health turns 503, every later write is refused even once the
// disk is healthy again (fail-stop, no retried fsync), and reads keep
// answering 200 with everything acknowledged. Reopened on a healthy disk, the
// chain verifies, holds every acknowledged write, and its read models equal a
// replay.
func TestFaultDiskFull(t *testing.T) {
	testDiskFault(t, syscall.ENOSPC, func(op errorfs.Op) bool {
		return op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt || op.Kind == errorfs.OpFilePreallocate
	})
}

func TestFaultFsyncError(t *testing.T) {
	testDiskFault(t, syscall.EIO, func(op errorfs.Op) bool {
		return (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) && strings.HasSuffix(op.Path, ".log")
	})
}

func testDiskFault(t *testing.T, errno syscall.Errno, hits func(errorfs.Op) bool) {
	dir := t.TempDir()
	// The errno is what a real disk returns. Once the fault has fired, every
	// later write or sync of the write-ahead log is counted, on or off: fail-stop
	// means there are none.
	var on atomic.Bool
	var mu sync.Mutex
	var failed []string // the files of the operations that failed
	var walAfter atomic.Int64
	inject := errorfs.InjectorFunc(func(op errorfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if len(failed) > 0 && strings.HasSuffix(op.Path, ".log") && walOp(op.Kind) {
			walAfter.Add(1)
		}
		if !on.Load() || !hits(op) {
			return nil
		}
		failed = append(failed, filepath.Base(op.Path))
		return fmt.Errorf("injected on %s: %w", op.Path, errno)
	})
	n := newFaultNode(t, dir, errorfs.Wrap(vfs.Default, inject), nil)

	// Acknowledged writes: identities, and missions through their lifecycle.
	var ackedIDs []ackedIdentity
	var ackedMissions []missionAck
	for i := range 5 {
		status, b := n.post(t, "/v1/civilization/bootstrap-identity", fmt.Sprintf(`{"display_name":"Disk %d","public_id":"disk-%d"}`, i, i))
		var a ackedIdentity
		if status != http.StatusOK || json.Unmarshal(b, &a) != nil {
			t.Fatalf("bootstrap: %d %s", status, b)
		}
		ackedIDs = append(ackedIDs, a)
		if status, b := n.post(t, "/v1/civilization/controller-binding",
			fmt.Sprintf(`{"agent_did":%q,"controller_kind":"local_model","controller_ref":"disk-%d"}`, a.AgentDID, i)); status != http.StatusOK {
			t.Fatalf("bind: %d %s", status, b)
		}
		m := n.createMission(t, i)
		state := "created"
		for _, s := range []struct{ step, state, body string }{
			{"claim", "claimed", fmt.Sprintf(`{"claimer":"disk-%d"}`, i)},
			{"complete", "completed", `{"result":"done"}`},
			{"settle", "settled", `{}`},
		}[:i%4] {
			if status, b := n.post(t, "/v1/core/missions/"+m+"/"+s.step, s.body); status != http.StatusOK {
				t.Fatalf("%s: %d %s", s.step, status, b)
			}
			state = s.state
		}
		ackedMissions = append(ackedMissions, missionAck{m, state})
	}
	tip := n.core.Log.Tip()

	on.Store(true)
	status, b := n.post(t, "/v1/civilization/bootstrap-identity", `{"display_name":"Lost","public_id":"lost-1"}`)
	requireUnavailable(t, "the write that met the fault", status, b)
	getJSON(t, n.url+"/v1/health", "", http.StatusServiceUnavailable, nil)
	on.Store(false)
	mu.Lock()
	failedOps := slices.Clone(failed)
	mu.Unlock()
	if len(failedOps) == 0 {
		t.Fatal("no fault was injected")
	}
	for _, w := range []struct{ path, body string }{
		{"/v1/civilization/bootstrap-identity", `{"display_name":"Later","public_id":"later-1"}`},
		{"/v1/core/missions/" + ackedMissions[0].ID + "/claim", `{"claimer":"disk-0"}`},
		{"/v1/core/missions", missionBody(99)},
	} {
		status, b := n.post(t, w.path, w.body)
		requireUnavailable(t, "a write after the fault, on a healthy disk", status, b)
	}
	getJSON(t, n.url+"/v1/health", "", http.StatusServiceUnavailable, nil)

	// Reads keep working and hold everything acknowledged.
	var evs eventsBody
	getJSON(t, n.url+"/v1/events?limit=1000", n.token, http.StatusOK, &evs)
	if uint64(len(evs.Events)) < tip.Seq || evs.Events[tip.Seq-1].ID != tip.ID {
		t.Errorf("GET /v1/events after the fault: %d events, want the acknowledged %d ending in %s", len(evs.Events), tip.Seq, tip.ID)
	}
	var list struct {
		Missions []struct {
			MissionID string `json:"mission_id"`
		} `json:"missions"`
	}
	getJSON(t, n.url+"/v1/core/missions?limit=1000", n.token, http.StatusOK, &list)
	if len(list.Missions) != len(ackedMissions) {
		t.Errorf("GET /v1/core/missions after the fault lists %d missions, want %d", len(list.Missions), len(ackedMissions))
	}
	for _, a := range ackedIDs {
		getJSON(t, n.url+"/v1/civilization/public-identity?public_id="+a.PublicID, n.token, http.StatusOK, nil)
	}
	getJSON(t, n.url+"/v1/state", n.token, http.StatusOK, nil)
	if n := walAfter.Load(); n != 0 {
		t.Errorf("the write-ahead log was written or synced %d times after the fault, want none (fail-stop, no retry)", n)
	}
	t.Logf("%v: %d events acknowledged before the fault; failed operations on %v; then writes 503, health 503, reads 200, no WAL write or sync",
		errno, tip.Seq, failedOps)

	// The same store on a healthy disk.
	n.core.Close()
	healed := newFaultNode(t, dir, nil, nil)
	rep, err := healed.core.Log.Verify(context.Background(), nil)
	if err != nil || rep.Events < tip.Seq {
		t.Fatalf("verify after reopening: %d events, %v; want at least %d", rep.Events, err, tip.Seq)
	}
	if ev, err := healed.core.Log.Event(tip.Seq); err != nil || ev.ID != tip.ID {
		t.Fatalf("acknowledged tip %d: %v, %v", tip.Seq, ev, err)
	}
	requireMissionStates(t, &process{url: healed.url, token: healed.token}, ackedMissions)
	for _, a := range ackedIDs {
		var got ackedIdentity
		getJSON(t, healed.url+"/v1/civilization/public-identity?public_id="+a.PublicID, healed.token, http.StatusOK, &got)
		if got != a {
			t.Errorf("identity %s after reopening: %+v", a.PublicID, got)
		}
	}
	diff, err := healed.core.Log.RebuildModels(context.Background(), nil)
	if err != nil || !diff.Same() {
		t.Errorf("read models after reopening differ from a replay: %+v, %v", diff, err)
	}
	if status, b := healed.post(t, "/v1/civilization/bootstrap-identity", `{"display_name":"Healed","public_id":"healed-1"}`); status != http.StatusOK {
		t.Errorf("a write after reopening on a healthy disk: %d %s", status, b)
	}
	getJSON(t, healed.url+"/v1/health", "", http.StatusOK, nil)
}

// walOp reports the operations that write or sync a file.
func walOp(k errorfs.OpKind) bool {
	switch k {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpFilePreallocate:
		return true
	}
	return false
}

func missionBody(i int) string {
	return fmt.Sprintf(`{"title":"Disk %d","description":"Survey the outer belt.","publisher":"genesis",`+
		`"publisher_kind":"planetary_government","domain":"research","subnet_id":"genesis",`+
		`"reward":{"agent_credit":5,"reputation":1,"capacity":0,"treasury_share_credit":2}}`, i)
}

func (n *faultNode) createMission(t *testing.T, i int) string {
	t.Helper()
	status, b := n.post(t, "/v1/core/missions", missionBody(i))
	var m struct {
		MissionID string `json:"mission_id"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &m) != nil || m.MissionID == "" {
		t.Fatalf("create mission: %d %s", status, b)
	}
	return m.MissionID
}

// requireUnavailable requires a 503 with the error code unavailable.
func requireUnavailable(t *testing.T, what string, status int, body []byte) {
	t.Helper()
	var e struct{ Code string }
	json.Unmarshal(body, &e)
	if status != http.StatusServiceUnavailable || e.Code != "unavailable" {
		t.Fatalf("%s: %d %s, want 503 unavailable", what, status, body)
	}
}
