package http

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// listAll pages through path (which has a query) with limit and returns the
// missions in order.
func listAll(t *testing.T, n *testNode, path string, limit int) []missionRec {
	t.Helper()
	var out []missionRec
	cursor := ""
	for pages := 0; ; pages++ {
		p := fmt.Sprintf("%s&limit=%d", path, limit)
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Missions   []missionRec `json:"missions"`
			NextCursor *string      `json:"next_cursor"`
		}
		n.get(p).wantOK(t, &page)
		if len(page.Missions) > limit || (page.NextCursor != nil && len(page.Missions) != limit) {
			t.Fatalf("%s: page of %d with next %v", p, len(page.Missions), page.NextCursor)
		}
		out = append(out, page.Missions...)
		if page.NextCursor == nil || pages > 1000 {
			return out
		}
		cursor = *page.NextCursor
	}
}

// TestMissionListFilters: every filter and every combination used returns exactly
// the matching missions, in creation order, whatever the page size.
func TestMissionListFilters(t *testing.T) {
	w := newMissionWorld(t)
	w.addAgent("org2", "frontier", "broker", "active")
	subnets := []string{"genesis", "rim", "core"}
	domains := []string{"security", "logistics", "research"}
	roles := []any{"enforcer", "archivist", nil}
	var all []missionRec
	for i := range 30 {
		pub := []string{"pub", "org2"}[i%2]
		rec := w.create(testToken, map[string]any{"publisher": pub, "subnet_id": subnets[i%3], "domain": domains[i%5%3],
			"required_role": roles[i%7%3], "required_faction": nil, "title": fmt.Sprintf("Mission %d", i)})
		all = append(all, rec)
	}
	// Move some along: claimed, completed and settled ones.
	for i, rec := range all {
		if i%4 == 0 {
			continue
		}
		if i%7%3 == 1 { // archivist missions stay open
			continue
		}
		w.step(rec.MissionID, "claim", testToken, map[string]any{"claimer": "ada"}).wantOK(t, &all[i])
		if i%3 == 0 || i%5 == 0 {
			w.step(rec.MissionID, "complete", testToken, map[string]any{"result": "r"}).wantOK(t, &all[i])
		}
		if i%5 == 0 {
			w.step(rec.MissionID, "settle", testToken, map[string]any{}).wantOK(t, &all[i])
		}
	}
	roleOf := func(i int) string {
		if r, ok := roles[i%7%3].(string); ok {
			return r
		}
		return ""
	}
	for _, q := range []map[string]string{
		{},
		{"state": "created"}, {"state": "claimed"}, {"state": "completed"}, {"state": "settled"},
		{"subnet_id": "rim"}, {"domain": "research"}, {"required_role": "enforcer"}, {"required_role": "archivist"},
		{"publisher": "org2"}, {"publisher": "pub", "state": "created"},
		{"subnet_id": "genesis", "domain": "security", "required_role": "enforcer"},
		{"subnet_id": "nowhere"}, {"required_role": "broker"}, {"publisher": "genesis"},
	} {
		var want []string
		for i, rec := range all {
			if (q["state"] == "" || rec.State == q["state"]) && (q["subnet_id"] == "" || rec.SubnetID == q["subnet_id"]) &&
				(q["domain"] == "" || rec.Domain == q["domain"]) && (q["required_role"] == "" || roleOf(i) == q["required_role"]) &&
				(q["publisher"] == "" || rec.Publisher == q["publisher"]) {
				want = append(want, rec.MissionID)
			}
		}
		v := url.Values{}
		for k, x := range q {
			v.Set(k, x)
		}
		for _, limit := range []int{1, 4, 1000} {
			var got []string
			for _, m := range listAll(t, w.testNode, "/v1/core/missions?"+v.Encode(), limit) {
				got = append(got, m.MissionID)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%v limit %d: %d missions\n got  %v\n want %v", q, limit, len(got), got, want)
			}
			// The supervision list filters and pages the same way.
			var sup []string
			for _, m := range listAll(t, w.testNode, "/v1/supervision/missions?"+v.Encode(), limit) {
				sup = append(sup, m.MissionID)
			}
			if strings.Join(sup, ",") != strings.Join(want, ",") {
				t.Errorf("supervision %v limit %d: %v", q, limit, sup)
			}
		}
	}
	if n := len(listAll(t, w.testNode, "/v1/core/missions?", 100)); n != 30 {
		t.Errorf("default list has %d", n)
	}
	for _, bad := range []struct{ query, field string }{
		{"state=open", "state"}, {"state=Created", "state"}, {"subnet_id=Rim", "subnet_id"}, {"domain=a%20b", "domain"},
		{"required_role=pilot", "required_role"}, {"publisher=P!", "publisher"}, {"limit=0", "limit"}, {"limit=1001", "limit"},
		{"limit=x", "limit"},
	} {
		w.get("/v1/core/missions?"+bad.query).wantError(t, http.StatusBadRequest, "invalid_field", bad.field)
		w.get("/v1/supervision/missions?"+bad.query).wantError(t, http.StatusBadRequest, "invalid_field", bad.field)
	}
	// A query with no single meaning: a cursor the node did not hand out, a
	// repeated parameter, a pair that does not parse.
	for _, bad := range []struct{ query, field string }{
		{"cursor=abc", "cursor"}, {"cursor=aQAAAAAAAAAB", "cursor"}, {"state=created&state=claimed", "state"},
		{"state=settled;", "state"}, {"publisher=%zz", "publisher"},
	} {
		w.get("/v1/core/missions?"+bad.query).wantError(t, http.StatusBadRequest, "invalid_query", bad.field)
		w.get("/v1/supervision/missions?"+bad.query).wantError(t, http.StatusBadRequest, "invalid_query", bad.field)
	}
}

// TestMissionPagingWhileCreating pages through the list with small pages while
// other clients keep publishing: every mission that existed before paging began
// is visited exactly once, and no mission twice.
func TestMissionPagingWhileCreating(t *testing.T) {
	w := newMissionWorld(t)
	before := map[string]bool{}
	for i := range 40 {
		before[w.create(testToken, map[string]any{"title": fmt.Sprintf("Early %d", i)}).MissionID] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r := w.civSend(http.MethodPost, "/v1/core/missions", testToken, missionBody(nil)); r.status != http.StatusOK {
					t.Errorf("create: %d %s", r.status, r.body)
					return
				}
			}
		}()
	}
	seen := map[string]int{}
	for _, m := range listAll(t, w.testNode, "/v1/core/missions?state=created", 3) {
		seen[m.MissionID]++
	}
	close(stop)
	wg.Wait()
	for id := range before {
		if seen[id] != 1 {
			t.Errorf("%s visited %d times", id, seen[id])
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s visited %d times", id, k)
		}
	}
	t.Logf("visited %d missions, %d added while paging", len(seen), len(seen)-len(before))
}
