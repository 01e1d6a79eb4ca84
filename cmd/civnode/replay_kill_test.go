package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReplayKilledMidRebuild: civnode replay SIGKILLed while it verifies the
// chain or rebuilds the read models leaves the node as it was. The kept models
// stay live until a rebuild is complete, so the next replay finds them equal to
// the chain, and the restarted node answers byte for byte as before.
func TestReplayKilledMidRebuild(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	p := startProcess(t, dir)
	createMissions(t, p, 3000)
	snapshot := func(p *process) [][]byte {
		var out [][]byte
		for _, path := range []string{"/v1/core/missions?limit=1000", "/v1/core/missions?limit=1000&state=created&subnet_id=genesis",
			"/v1/civilization/metrics", "/v1/state"} {
			out = append(out, getJSON(t, p.url+path, p.token, http.StatusOK, nil))
		}
		return out[:3] // /v1/state is read to be sure the node serves; its chain position moves with audits only
	}
	before := snapshot(p)
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, p.stderr)
	}

	// A whole replay first, to learn how long one takes here.
	start := time.Now()
	if out, code := runBinary(t, "replay", "--data-dir", dir); code != 0 || !replayFoundNoDifference.MatchString(out) {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}
	whole := time.Since(start)
	for _, part := range []float64{0.3, 0.6, 0.9} {
		cmd := exec.Command(civnodeBin, "replay", "--data-dir", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(part * float64(whole)))
		cmd.Process.Kill()
		cmd.Wait()
	}
	if out, code := runBinary(t, "replay", "--data-dir", dir); code != 0 || !replayFoundNoDifference.MatchString(out) {
		t.Fatalf("replay after the killed ones: exit %d, want the kept models equal to the rebuilt ones:\n%s", code, out)
	}
	p = startProcess(t, dir)
	after := snapshot(p)
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("answer %d differs after the killed replays:\n before %.300s\n after  %.300s", i, before[i], after[i])
		}
	}
	p.signal(t, syscall.SIGTERM)
	p.wait(t)
}

// createMissions publishes n missions of subnet genesis with 16 clients.
func createMissions(t *testing.T, p *process, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				body := fmt.Sprintf(`{"title":"Survey %d","description":"Survey the outer belt.","publisher":"genesis",`+
					`"publisher_kind":"planetary_government","domain":"research","subnet_id":"genesis",`+
					`"reward":{"agent_credit":10,"reputation":2,"capacity":1,"treasury_share_credit":4}}`, i)
				req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/core/missions", bytes.NewReader([]byte(body)))
				req.Header.Set("Authorization", "Bearer "+p.token)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("create mission %d: status %d", i, resp.StatusCode)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
