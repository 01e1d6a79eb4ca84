package http

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentBootstrapsOfOneSlug: 16 clients bootstrap the same public_id at
// once; exactly one gets 200, the rest 409 slug_taken.
func TestConcurrentBootstrapsOfOneSlug(t *testing.T) {
	n := newCivNode(t)
	statuses := race(t, 16, func(i int) response {
		return n.civPost("/v1/civilization/bootstrap-identity", map[string]any{
			"display_name": fmt.Sprintf("Racer %d", i), "public_id": "the-one"})
	}, "slug_taken")
	count, err := n.read.Count()
	if err != nil {
		t.Fatal(err)
	}
	if statuses[http.StatusOK] != 1 || statuses[http.StatusConflict] != 15 || count != 1 {
		t.Fatalf("statuses %v, %d identities; want one 200 and fifteen 409", statuses, count)
	}
}

// TestConcurrentExclusiveBindingsHTTP: 16 agents race for one exclusive
// controller_ref; exactly one gets it.
func TestConcurrentExclusiveBindingsHTTP(t *testing.T) {
	n := newCivNode(t)
	dids := make([]string, 16)
	for i := range dids {
		dids[i], _ = n.bootstrap(map[string]any{"display_name": "Racer"})
	}
	statuses := race(t, 16, func(i int) response {
		return n.civPost("/v1/civilization/controller-binding", map[string]any{
			"agent_did": dids[i], "controller_kind": "remote_orchestrator", "controller_ref": "orch-1"})
	}, "controller_ref_taken")
	if statuses[http.StatusOK] != 1 || statuses[http.StatusConflict] != 15 {
		t.Fatalf("statuses %v; want one 200 and fifteen 409", statuses)
	}
	var m struct {
		Bindings struct {
			Active int `json:"active"`
		} `json:"bindings"`
	}
	n.get("/v1/civilization/metrics").wantOK(t, &m)
	if m.Bindings.Active != 1 {
		t.Errorf("%d active bindings", m.Bindings.Active)
	}
}

// race runs do concurrently k times and counts statuses; every 409 must carry
// conflictCode.
func race(t *testing.T, k int, do func(i int) response, conflictCode string) map[int]int {
	t.Helper()
	var wg sync.WaitGroup
	rs := make([]response, k)
	start := make(chan struct{})
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rs[i] = do(i)
		}()
	}
	close(start)
	wg.Wait()
	statuses := map[int]int{}
	for _, r := range rs {
		statuses[r.status]++
		if r.status == http.StatusConflict && !strings.Contains(string(r.body), `"code":"`+conflictCode+`"`) {
			t.Errorf("409 body %s", r.body)
		}
	}
	return statuses
}

// TestIdentitiesPagingWhileBootstrapping pages through the list with small pages
// while other clients keep bootstrapping: every identity that existed before
// paging began is visited exactly once and no identity twice.
func TestIdentitiesPagingWhileBootstrapping(t *testing.T) {
	n := newCivNode(t)
	before := map[string]bool{}
	for i := range 60 {
		did, _ := n.bootstrap(map[string]any{"display_name": fmt.Sprintf("Early %d", i)})
		before[did] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var added sync.Map
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := n.civPost("/v1/civilization/bootstrap-identity", map[string]any{"display_name": fmt.Sprintf("Late %d %d", w, i)})
				if r.status != http.StatusOK {
					t.Errorf("bootstrap: %d %s", r.status, r.body)
					return
				}
				added.Store(i, true)
			}
		}()
	}
	seen := map[string]int{}
	path := "/v1/civilization/identities?limit=7"
	for pages := 0; ; pages++ {
		var page struct {
			Identities []struct {
				AgentDID string `json:"agent_did"`
			} `json:"identities"`
			NextCursor *string `json:"next_cursor"`
		}
		n.get(path).wantOK(t, &page)
		for _, id := range page.Identities {
			seen[id.AgentDID]++
		}
		if page.NextCursor == nil || pages > 500 {
			break
		}
		path = "/v1/civilization/identities?limit=7&cursor=" + *page.NextCursor
	}
	close(stop)
	wg.Wait()
	for did := range before {
		if seen[did] != 1 {
			t.Errorf("%s visited %d times", did, seen[did])
		}
	}
	late := 0
	for did, k := range seen {
		if k != 1 {
			t.Errorf("%s visited %d times", did, k)
		}
		if !before[did] {
			late++
		}
	}
	t.Logf("visited %d identities, %d of them added while paging", len(seen), late)
}
