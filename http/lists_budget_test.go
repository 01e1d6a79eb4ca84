package http

import (
	"context"
	"strings"
	"testing"
)

// TestMissionListsStopAtByteBudget: missions with large results fill a page of
// the missions lists long before limit; the page ends at the budget with a
// cursor, never empty, and paging visits every mission exactly once in order.
// missions/my marks the lists it cut.
func TestMissionListsStopAtByteBudget(t *testing.T) {
	const budget = 64 << 10
	w := newMissionWorldOn(t, newCivNodeServing(t, nil, func(o *Options) { o.PageBytes = budget }))
	var want []string
	for range 12 {
		rec := w.create(w.tokens["pub"], nil)
		w.step(rec.MissionID, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
		w.step(rec.MissionID, "complete", w.tokens["ada"], map[string]any{"result": strings.Repeat("r", 20<<10)}).wantOK(t, nil)
		want = append(want, rec.MissionID)
	}
	for _, path := range []string{"/v1/core/missions", "/v1/supervision/missions"} {
		var got []string
		pages, cursor := 0, ""
		for {
			var page struct {
				Missions   []missionRec `json:"missions"`
				NextCursor *string      `json:"next_cursor"`
			}
			q := path + "?state=completed&limit=1000"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			r := w.get(q).wantOK(t, &page)
			pages++
			if len(page.Missions) == 0 || len(r.body) > budget+(24<<10) {
				t.Fatalf("%s page %d: %d missions in %d bytes, budget %d", path, pages, len(page.Missions), len(r.body), budget)
			}
			for _, m := range page.Missions {
				got = append(got, m.MissionID)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if pages < 3 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %d pages gave %v, want every mission once in order %v", path, pages, got, want)
		}
	}
	r := w.get("/v1/core/missions/my?public_id=ada&limit=1000").wantOK(t, nil)
	if r.header.Get(PageTruncatedHeader) != "true" || len(r.body) > budget+(24<<10) {
		t.Fatalf("missions/my: %d bytes, truncated header %q", len(r.body), r.header.Get(PageTruncatedHeader))
	}
}

// TestAuditStopsAtByteBudget: the audit list ends at the budget, marks the cut,
// and paging by since= returns every entry once.
func TestAuditStopsAtByteBudget(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.PageBytes = 1024 }, nil)
	for i := range 12 {
		if _, err := n.log.Audit(context.Background(), "test.entry", "owner", map[string]any{"n": i, "pad": strings.Repeat("x", 200)}); err != nil {
			t.Fatal(err)
		}
	}
	all := n.auditEntries("")
	var got []string
	since, pages := "", 0
	for {
		var page struct {
			Entries []struct {
				ID        string `json:"id"`
				Timestamp string `json:"timestamp"`
			} `json:"entries"`
		}
		q := "/v1/audit?limit=1000"
		if since != "" {
			q += "&since=" + since
		}
		r := n.get(q)
		r.decode(t, &page)
		if len(page.Entries) == 0 {
			break
		}
		pages++
		cut := r.header.Get(PageTruncatedHeader) == "true"
		if len(r.body) > 1024+512 && len(page.Entries) > 1 {
			t.Fatalf("page %d: %d bytes over a 1 KiB budget", pages, len(r.body))
		}
		for _, e := range page.Entries {
			got = append(got, e.ID)
		}
		since = page.Entries[len(page.Entries)-1].Timestamp
		if !cut {
			break
		}
	}
	if pages < 2 || len(got) < len(all) {
		t.Fatalf("%d pages gave %d entries, the audit holds at least %d", pages, len(got), len(all))
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("entry %s served twice", id)
		}
		seen[id] = true
	}
}

// TestMissionListsBudgetWhatIsWritten: the byte budget counts a mission as it
// is written, not as it is stored. Results of control characters are six times
// their stored size once escaped (\u0001); every page of every mission list,
// and missions/my, still fits the budget as written, and paging still visits
// every mission once.
func TestMissionListsBudgetWhatIsWritten(t *testing.T) {
	const budget = 64 << 10
	w := newMissionWorldOn(t, newCivNodeServing(t, nil, func(o *Options) { o.PageBytes = budget }))
	var want []string
	for range 16 {
		rec := w.create(w.tokens["pub"], nil)
		w.step(rec.MissionID, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
		w.step(rec.MissionID, "complete", w.tokens["ada"], map[string]any{"result": strings.Repeat("\x01", 2<<10)}).wantOK(t, nil)
		want = append(want, rec.MissionID)
	}
	for _, path := range []string{"/v1/core/missions", "/v1/supervision/missions"} {
		var got []string
		cursor := ""
		for pages := 1; ; pages++ {
			var page struct {
				Missions   []missionRec `json:"missions"`
				NextCursor *string      `json:"next_cursor"`
			}
			q := path + "?state=completed&limit=1000"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			r := w.get(q).wantOK(t, &page)
			if len(page.Missions) == 0 || len(r.body) > budget {
				t.Fatalf("%s page %d: %d missions in %d bytes, budget %d", path, pages, len(page.Missions), len(r.body), budget)
			}
			for _, m := range page.Missions {
				got = append(got, m.MissionID)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: paging gave %v, want every mission once in order %v", path, got, want)
		}
	}
	r := w.get("/v1/core/missions/my?public_id=ada&limit=1000").wantOK(t, nil)
	if r.header.Get(PageTruncatedHeader) != "true" || len(r.body) > budget {
		t.Fatalf("missions/my: %d bytes against a budget of %d, truncated header %q", len(r.body), budget, r.header.Get(PageTruncatedHeader))
	}
}
